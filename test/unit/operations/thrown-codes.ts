/**
 * The error codes each handler can throw, read from the source: every handler declared with
 * `handlersFor(specs, { "<id>": ... })`, and within it every `new SandpoolError("<code>", ...)`
 * and `malformed(...)` (`request.malformed`), following the calls it makes to functions of
 * src/ by name (its own file's, and those it imports), never the methods of the services it
 * is given: what a service refuses with is that service's to declare.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";

const SRC = resolve(import.meta.dirname, "../../../src");

/** What a helper of src/contract/error-codes.ts makes, besides `new SandpoolError`. */
const MAKERS: Record<string, string> = { malformed: "request.malformed" };

const parsed = new Map<string, ts.SourceFile>();
function sourceOf(path: string): ts.SourceFile {
  let file = parsed.get(path);
  if (!file) {
    file = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
    parsed.set(path, file);
  }
  return file;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** The declaration `name` stands for in `file`: one of its own, or one it imports from src/. */
function declarationOf(
  file: ts.SourceFile,
  name: string,
): { file: ts.SourceFile; node: ts.Node } | undefined {
  let found: ts.Node | undefined;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (
      (ts.isFunctionDeclaration(node) || ts.isVariableDeclaration(node)) &&
      node.name !== undefined &&
      ts.isIdentifier(node.name) &&
      node.name.text === name
    ) {
      found = node;
      return;
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  if (found) return { file, node: found };
  for (const statement of file.statements) {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const bindings = statement.importClause?.namedBindings;
    if (!bindings || !ts.isNamedImports(bindings)) continue;
    const imported = bindings.elements.find((element) => element.name.text === name);
    if (!imported || !statement.moduleSpecifier.text.startsWith(".")) continue;
    const path = resolve(dirname(file.fileName), statement.moduleSpecifier.text.replace(/\.js$/, ".ts"));
    if (!path.startsWith(SRC)) return undefined;
    return declarationOf(sourceOf(path), (imported.propertyName ?? imported.name).text);
  }
  return undefined;
}

/** The codes `node` throws or makes, with those of the src/ functions it calls. */
function codesIn(file: ts.SourceFile, node: ts.Node, codes: Set<string>, followed: Set<ts.Node>): void {
  if (
    ts.isNewExpression(node) &&
    node.expression.getText(file) === "SandpoolError" &&
    node.arguments?.[0] &&
    ts.isStringLiteral(node.arguments[0])
  )
    codes.add(node.arguments[0].text);
  if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
    const name = node.expression.text;
    const made = MAKERS[name];
    if (made) codes.add(made);
    else {
      const declaration = declarationOf(file, name);
      if (declaration && !followed.has(declaration.node)) {
        followed.add(declaration.node);
        codesIn(declaration.file, declaration.node, codes, followed);
      }
    }
  }
  ts.forEachChild(node, (child) => codesIn(file, child, codes, followed));
}

/** Each handler declared with `handlersFor` in src/, by operation id, with the codes it can throw. */
export function thrownCodesByOperation(): Map<string, { file: string; codes: string[] }> {
  const handlers = new Map<string, { file: string; codes: string[] }>();
  for (const path of sourceFiles(SRC)) {
    const file = sourceOf(path);
    if (!file.text.includes("handlersFor(")) continue;
    const visit = (node: ts.Node): void => {
      if (
        ts.isCallExpression(node) &&
        node.expression.getText(file) === "handlersFor" &&
        node.arguments[1] &&
        ts.isObjectLiteralExpression(node.arguments[1])
      ) {
        for (const property of node.arguments[1].properties) {
          if (!ts.isPropertyAssignment(property) || !ts.isStringLiteral(property.name)) continue;
          const codes = new Set<string>();
          codesIn(file, property.initializer, codes, new Set());
          handlers.set(property.name.text, { file: path.slice(SRC.length + 1), codes: [...codes].sort() });
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(file);
  }
  return handlers;
}
