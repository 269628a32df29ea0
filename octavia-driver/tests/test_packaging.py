"""The package as an operator installs it: setuptools builds the wheel
from pyproject.toml (offline, with the suite's own setuptools), and
Octavia's worker, given `[controller_worker] amphora_driver =
amphora_spec_driver`, loads the installed driver through its entry point
(stevedore, as every amphora task does)."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import zipfile

from tests import base

BUILD = '''
import sys
from setuptools import build_meta
print(build_meta.build_wheel(sys.argv[1]))
'''

LOAD = '''
import sys
sys.path.insert(0, sys.argv[1])
from oslo_config import cfg
from octavia.common import config  # noqa: F401
cfg.CONF([], project='octavia', default_config_files=[])
cfg.CONF.set_override('amphora_driver', 'amphora_spec_driver',
                      group='controller_worker')
from octavia.controller.worker.v2.tasks import amphora_driver_tasks
driver = amphora_driver_tasks.AmpListenersUpdate().amphora_driver
cls = type(driver)
print(f'{cls.__module__}.{cls.__name__}', sys.modules[cls.__module__].__file__)
'''


class Packaging(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix='amphora-spec-driver-wheel-')
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.env = {k: v for k, v in os.environ.items()
                    if k != 'PYTHONPATH'}
        self.env['PYTHONDONTWRITEBYTECODE'] = '1'

    def run_python(self, code, *args, cwd):
        out = subprocess.run([sys.executable, '-c', code, *args], cwd=cwd,
                             env=self.env, capture_output=True, text=True,
                             timeout=300, check=False)
        self.assertEqual(out.returncode, 0, out.stderr[-3000:])
        return out.stdout.strip().splitlines()[-1]

    def test_the_worker_loads_the_installed_driver_by_name(self):
        src = os.path.join(self.tmp, 'src')
        shutil.copytree(base.PACKAGE_ROOT, src, ignore=shutil.ignore_patterns(
            'tests', '__pycache__', 'build', '*.egg-info', '*.sh'))
        wheels = os.path.join(self.tmp, 'wheels')
        os.mkdir(wheels)
        wheel = self.run_python(BUILD, wheels, cwd=src)
        self.assertRegex(wheel, r'^amphora_spec_driver-0\.1\.0-.*\.whl$')

        site = os.path.join(self.tmp, 'site')
        with zipfile.ZipFile(os.path.join(wheels, wheel)) as z:
            names = z.namelist()
            z.extractall(site)
        self.assertFalse([n for n in names if n.startswith('tests/')],
                         'the tests are not installed')
        loaded, where = self.run_python(LOAD, site, cwd=self.tmp).split()
        self.assertEqual(loaded,
                         'amphora_spec_driver.driver.AmphoraSpecDriver')
        self.assertTrue(where.startswith(site + os.sep), where)


if __name__ == '__main__':
    unittest.main()
