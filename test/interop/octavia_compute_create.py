"""What Octavia's controller hands Nova when it boots an amphora.

Runs the worker's own compute task (CertComputeCreate, which calls
ComputeCreate) with the noop compute driver, whose build() is replaced by one
that records its arguments: the config drive files (amphora-agent.conf from
AgentJinjaTemplater, 10-rsyslog.conf from LoggingJinjaTemplater, the
server certificate the task decrypts, the client CA it reads) and the user
data (UserDataJinjaCfg), in the mode [controller_worker]
user_data_config_drive chooses.

Input (one JSON document on stdin):
  {"amphora_id": ..., "server_pem": ..., "client_ca": ...,
   "overrides": {"group": {"option": value}}}
Output (one JSON document on stdout): the build() keyword arguments, plus
"user_data_files": {path: content} as cloud-init's YAML parser reads the
write_files of the user data ({} when it has none).
Only test code: it imports Octavia, it copies nothing from it.
"""
import json
import sys
import tempfile

import yaml
from oslo_config import cfg
from oslo_log import log as oslo_logging

from octavia.common import config as octavia_config  # noqa: F401 (registers the options)
from octavia.common import utils
from octavia.controller.worker.v2.tasks import compute_tasks

CONF = cfg.CONF
oslo_logging.register_options(CONF)


def main():
    args = json.load(sys.stdin)
    CONF([], project='octavia', default_config_files=[])
    with tempfile.NamedTemporaryFile('w', suffix='.pem', delete=False) as ca:
        ca.write(args['client_ca'])
    CONF.set_override('client_ca', ca.name, group='controller_worker')
    CONF.set_override('compute_driver', 'compute_noop_driver', group='controller_worker')
    for group, opts in args.get('overrides', {}).items():
        for name, value in opts.items():
            CONF.set_override(name, value, group=group)

    task = compute_tasks.CertComputeCreate()
    built = {}

    def build(**kwargs):
        built.update(kwargs)
        return 'compute-' + args['amphora_id']
    task.compute.build = build

    # The worker keeps the server certificate encrypted with the passphrase
    # until this task decrypts it for the config drive.
    server_pem = utils.get_server_certs_key_passphrases_fernet().encrypt(
        args['server_pem'].encode('utf-8')).decode('utf-8')
    compute_id = task.execute(args['amphora_id'], server_pem=server_pem, server_group_id=None)

    user_data = built.get('user_data') or ''
    parsed = yaml.safe_load(user_data) or {}
    built['user_data_files'] = {f['path']: f['content'] for f in parsed.get('write_files', [])}
    built['user_data_runcmd'] = parsed.get('runcmd', [])
    built['compute_id'] = compute_id
    json.dump(built, sys.stdout, default=str)


main()
