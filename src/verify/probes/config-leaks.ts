/**
 * Configuration a session plants for whatever runs next: shell startup files, Python's site
 * hooks (sitecustomize, usercustomize, .pth), matplotlibrc, variables that name startup files.
 * Planted in every writable place a program might read (the sessions' root, /tmp, the
 * workspace, each writable directory on sys.path); each hook that runs leaves
 * /tmp/<tag>.ran-<what>, which the next session looks for after its bash tool and a fresh
 * Python have run.
 */
import { HOST_GUARD } from "../host-guard.js";
import type { LeakProbe } from "../probe.js";
import { py } from "../probe.js";

const PLANT_CONFIG = (tag: string) => `${HOST_GUARD}
import os, site, sys
tag = ${py(tag)}
ran = lambda what: "open('/tmp/%s.ran-%s', 'w').close()" % (tag, what)
shell = ': > /tmp/%s.ran-shell\\nexport SPV_CFG_%s=1\\n' % (tag, tag)
home = os.environ.get('HOME', os.getcwd())
roots = {home, os.path.dirname(os.path.dirname(os.getcwd())), '/tmp'}
mpl = os.environ.get('MPLCONFIGDIR')
planted = []
def put(path, text):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        open(path, 'w').write(text)
        planted.append(path)
    except OSError:
        pass
for root in roots:
    for name in ('.bashrc', '.bash_profile', '.profile', '.bash_login', '.shrc'):
        put(os.path.join(root, name), shell)
    put(os.path.join(root, '.inputrc'), '$include /tmp/%s.inputrc\\n' % tag)
    put(os.path.join(root, '.pythonrc.py'), ran('pythonrc') + '\\n')
    put(os.path.join(root, '.config', 'matplotlib', 'matplotlibrc'), 'figure.dpi: 17\\n')
    put(os.path.join(root, '.matplotlib', 'matplotlibrc'), 'figure.dpi: 17\\n')
    put(os.path.join(root, '.config', 'pip', 'pip.conf'), '[global]\\nindex-url = http://%s.invalid/\\n' % tag)
    user_site = os.path.join(root, '.local', 'lib', 'python%d.%d' % sys.version_info[:2], 'site-packages')
    put(os.path.join(user_site, 'usercustomize.py'), ran('usercustomize') + '\\n')
    put(os.path.join(user_site, tag + '.pth'), 'import os; ' + ran('pth') + '\\n')
if mpl:
    put(os.path.join(mpl, 'matplotlibrc'), 'figure.dpi: 17\\n')
for entry in [p or os.getcwd() for p in sys.path] + [site.getusersitepackages()]:
    if os.path.isdir(entry) and os.access(entry, os.W_OK):
        put(os.path.join(entry, 'sitecustomize.py'), ran('sitecustomize') + '\\n')
        put(os.path.join(entry, 'usercustomize.py'), ran('usercustomize') + '\\n')
        put(os.path.join(entry, tag + '.pth'), 'import os; ' + ran('pth') + '\\n')
for name, text in (('BASH_ENV', shell), ('ENV', shell), ('PYTHONSTARTUP', ran('startup'))):
    path = '/tmp/%s.%s' % (tag, name)
    put(path, text)
    os.environ[name] = path
`;

/** In the looking session: which hooks ran there, and what matplotlib's settings say. */
const LOOK_CONFIG = (tag: string) =>
  `[f + ' exists: a planted hook ran' for f in os.listdir('/tmp') if f.startswith(${py(`${tag}.ran-`)})] + ` +
  `['the bash tool has SPV_CFG_' + ${py(tag)} for l in SHELL_ENV.splitlines() if l.startswith('SPV_CFG_' + ${py(tag)})] + ` +
  "MATPLOTLIB_DPI";

export const configLeakProbes: LeakProbe[] = [
  {
    kind: "leak",
    name: "config.planted-startup",
    claim:
      "no shell startup file, Python site hook, matplotlibrc, pip configuration or startup variable a session writes is read by the next session's tools",
    plant: { stage: "early", code: PLANT_CONFIG },
    look: { stage: "after-tools", expression: LOOK_CONFIG },
  },
];
