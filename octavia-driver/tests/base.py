"""What every test module needs: the package on sys.path, Octavia's
configuration loaded, and the agent's spec schema.

The schema is the LoadBalancerSpec of the agent's OpenAPI document
(docs/openapi-2.0.json, generated from agent/model/spec/schema.ts by `npm
run openapi`), found beside this folder in the repository or at
$AMPHORA_SPEC_OPENAPI. It is checked with python3-jsonschema (JSON Schema
2020-12, as OpenAPI 3.1 has it, with the ipv4/ipv6 formats).
"""

import json
import os
import sys

sys.dont_write_bytecode = True  # the checkout is shared: leave no __pycache__

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
if PACKAGE_ROOT not in sys.path:
    sys.path.insert(0, PACKAGE_ROOT)

from oslo_config import cfg  # noqa: E402

from octavia.common import config as _octavia_config  # noqa: E402,F401

CONF = cfg.CONF
if not getattr(CONF, '_amphora_spec_driver_tests', False):
    CONF([], project='octavia', default_config_files=[])
    CONF._amphora_spec_driver_tests = True

OPENAPI = os.environ.get('AMPHORA_SPEC_OPENAPI') or os.path.join(
    PACKAGE_ROOT, os.pardir, 'docs', 'openapi-2.0.json')
# Where test_spec writes the specs it builds, for the agent's own check
# (run-tests.sh renders each with `amphora-agent render`).
SPEC_OUT = os.environ.get('AMPHORA_SPEC_OUT')

_validator = None


def openapi_document():
    with open(OPENAPI, encoding='utf-8') as f:
        return json.load(f)


def spec_problems(spec):
    """The schema's complaints about `spec`, one line each (empty: valid)."""
    global _validator
    if _validator is None:
        import jsonschema
        schema = openapi_document()['components']['schemas'][
            'LoadBalancerSpec']
        cls = jsonschema.Draft202012Validator
        cls.check_schema(schema)
        _validator = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return sorted(
        f"{'/'.join(str(p) for p in e.absolute_path) or '(spec)'}: "
        f"{e.message}"
        for e in _validator.iter_errors(spec))


def write_spec(name, spec):
    if SPEC_OUT:
        os.makedirs(SPEC_OUT, exist_ok=True)
        with open(os.path.join(SPEC_OUT, f'{name}.json'), 'w',
                  encoding='utf-8') as f:
            json.dump(spec, f, indent=1, sort_keys=True)
