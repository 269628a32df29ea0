"""Octavia's health manager, end to end, for the interop tests.

Usage: health_manager.py PORT KEY
Octavia's receiver (UDPStatusGetter) binds 127.0.0.1:PORT and decodes each
datagram (HMAC with KEY); Octavia's UpdateHealthDb.update_health then writes
the operating statuses into a SQLite database created from Octavia's own
models (octavia.db.models), reached through Octavia's own session code
(octavia.db.api, pointed at the file by CONF [database] connection).

stdin, one JSON request per line, answered in order on stdout:
  {"op": "apply", "args": SPEC}   write SPEC's objects as Octavia's API creates
      them (db/prepare.py: new objects OFFLINE, a member of a pool without a
      health monitor NO_MONITOR, provisioning ACTIVE once the worker is done);
      existing rows keep their operating status, rows missing from SPEC go.
      SPEC: {"lb_id", "amphora_id", "listeners": [{"id", "port", "pool_id"}],
             "pools": [{"id", "monitor": bool, "members": [{"id", "address",
             "port", "weight", "enabled"}]}]}
  {"op": "status", "args": {"members": [ids]}}  operating_status columns:
      {"loadbalancer": s, "listeners": {id: s}, "pools": {id: s},
       "members": {id: s}} (members: only the ids asked for, or all).
Answers: {"reply": true, "ok": true, "result": ...} or {"reply": true, "ok": false, "error": "..."}.
Events, one line per datagram processed:
  {"processed": {"seq", "pools": {key: {"status", "members": {...} or
   "member_count"}}, "ms": update_health's run time, "db": {member id: status} for
   the members of pools of at most 20 members after the update,
   "log": [warnings and errors Octavia logged meanwhile]}}
  {"rejected": "..."} when the receiver refuses a datagram.

Only test code: it imports Octavia and copies nothing from it.
"""
import json
import logging
import os
import sys
import tempfile
import threading
import time

PROTOCOL_OUT = sys.stdout
sys.stdout = sys.stderr  # anything the imported code prints must not break the protocol

from oslo_config import cfg  # noqa: E402

from octavia.common import config as octavia_config  # noqa: E402,F401 (registers the options)
from octavia.common import constants  # noqa: E402
from octavia.amphorae.drivers.health import heartbeat_udp  # noqa: E402
from octavia.db import api as db_api  # noqa: E402
from octavia.db import base_models  # noqa: E402
from octavia.db import models  # noqa: E402
import sqlalchemy as sa  # noqa: E402

CONF = cfg.CONF
port, key = int(sys.argv[1]), sys.argv[2]
db_file = os.path.join(tempfile.mkdtemp(prefix='octavia-hm-'), 'octavia.db')
CONF([], project='octavia', default_config_files=[])
CONF.set_override('connection', 'sqlite:///' + db_file, group='database')
# Octavia's defaults are for a MySQL pool; oslo.db gives a SQLite file a NullPool, which takes none.
for option in ('max_pool_size', 'max_overflow', 'pool_timeout'):
    CONF.set_override(option, None, group='database')
# update_health commits every status change on its own: no fsync per change on a test disk.
CONF.set_override('sqlite_synchronous', False, group='database')
CONF.set_override('bind_ip', '127.0.0.1', group='health_manager')
CONF.set_override('bind_port', port, group='health_manager')
CONF.set_override('heartbeat_key', key, group='health_manager')

write_lock = threading.Lock()  # one writer at a time on the SQLite file
out_lock = threading.Lock()


def emit(obj):
    with out_lock:
        PROTOCOL_OUT.write(json.dumps(obj, default=str) + '\n')
        PROTOCOL_OUT.flush()


class LogCollector(logging.Handler):
    """update_health logs and swallows its own exceptions: keep them for the test."""

    def __init__(self):
        super().__init__(level=logging.WARNING)
        self.records = []

    def emit(self, record):
        self.records.append('%s: %s' % (record.levelname, record.getMessage()))


LOG = LogCollector()
logging.getLogger('octavia').addHandler(LOG)

engine = db_api.get_engine()
base_models.BASE.metadata.create_all(engine)

LOOKUPS = {
    models.OperatingStatus: constants.SUPPORTED_OPERATING_STATUSES,
    models.ProvisioningStatus: constants.SUPPORTED_PROVISIONING_STATUSES,
    models.Protocol: ['HTTP'],
    models.Algorithm: ['ROUND_ROBIN'],
    models.HealthMonitorType: ['HTTP'],
    models.AmphoraRoles: ['STANDALONE'],
    models.LBTopology: ['SINGLE'],
    models.ClientAuthenticationMode: ['NONE'],
}
with engine.begin() as conn:
    for model, names in LOOKUPS.items():
        conn.execute(model.__table__.insert(), [{'name': n} for n in names])

PROJECT = 'hm-test-project'


def upsert(conn, model, rows, parent_col=None, parent_ids=()):
    """Insert new rows (API defaults), update the given columns of existing ones, delete the rest."""
    table = model.__table__
    existing = set()
    if parent_col is not None and parent_ids:
        existing = {r[0] for r in conn.execute(
            sa.select(table.c.id).where(table.c[parent_col].in_(list(parent_ids))))}
    wanted = {r['id'] for r in rows}
    if existing - wanted:
        conn.execute(table.delete().where(table.c.id.in_(list(existing - wanted))))
    new = [r for r in rows if r['id'] not in existing]
    if new:
        conn.execute(table.insert(), new)
    for r in rows:
        if r['id'] in existing:
            changes = {k: v for k, v in r.items() if k not in ('id', 'operating_status')}
            conn.execute(table.update().where(table.c.id == r['id']).values(**changes))


def apply(spec):
    lb_id = spec['lb_id']
    with write_lock, engine.begin() as conn:
        if not conn.execute(sa.select(models.LoadBalancer.__table__.c.id)).first():
            conn.execute(models.LoadBalancer.__table__.insert(), [{
                'id': lb_id, 'project_id': PROJECT, 'provisioning_status': constants.ACTIVE,
                'operating_status': constants.OFFLINE, 'topology': 'SINGLE', 'enabled': True}])
            conn.execute(models.Amphora.__table__.insert(), [{
                'id': spec['amphora_id'], 'load_balancer_id': lb_id, 'status': constants.AMPHORA_ALLOCATED,
                'role': 'STANDALONE', 'lb_network_ip': '127.0.0.1', 'compute_id': 'hm-test-compute'}])
        pools = spec['pools']
        upsert(conn, models.Pool, [{
            'id': p['id'], 'project_id': PROJECT, 'load_balancer_id': lb_id, 'protocol': 'HTTP',
            'lb_algorithm': 'ROUND_ROBIN', 'provisioning_status': constants.ACTIVE,
            'operating_status': constants.OFFLINE, 'enabled': True} for p in pools],
            'load_balancer_id', [lb_id])
        upsert(conn, models.Listener, [{
            'id': listener['id'], 'project_id': PROJECT, 'load_balancer_id': lb_id, 'protocol': 'HTTP',
            'protocol_port': listener['port'], 'default_pool_id': listener['pool_id'],
            'provisioning_status': constants.ACTIVE, 'operating_status': constants.OFFLINE,
            'enabled': True} for listener in spec['listeners']], 'load_balancer_id', [lb_id])
        upsert(conn, models.HealthMonitor, [{
            'id': p['id'] + '-hm', 'project_id': PROJECT, 'pool_id': p['id'], 'type': 'HTTP', 'delay': 1,
            'timeout': 1, 'fall_threshold': 1, 'rise_threshold': 1, 'http_method': 'GET',
            'url_path': '/healthz', 'expected_codes': '200', 'enabled': True,
            'provisioning_status': constants.ACTIVE, 'operating_status': constants.ONLINE}
            for p in pools if p['monitor']], 'pool_id', [p['id'] for p in pools])
        upsert(conn, models.Member, [{
            'id': m['id'], 'project_id': PROJECT, 'pool_id': p['id'], 'ip_address': m['address'],
            'protocol_port': m['port'], 'weight': m['weight'], 'backup': False, 'enabled': m['enabled'],
            'provisioning_status': constants.ACTIVE,
            'operating_status': constants.OFFLINE if p['monitor'] else constants.NO_MONITOR}
            for p in pools for m in p['members']], 'pool_id', [p['id'] for p in pools])
    return True


def status(args):
    ids = args.get('members')
    # Between two updates only: update_health commits the pools before the load
    # balancer, so a read in the middle would see a state no update leaves.
    with write_lock, engine.connect() as conn:
        def col(model, where=None):
            t = model.__table__
            q = sa.select(t.c.id, t.c.operating_status)
            if where is not None:
                q = q.where(where)
            return {r[0]: r[1] for r in conn.execute(q)}
        lbs = col(models.LoadBalancer)
        member_t = models.Member.__table__
        return {
            'loadbalancer': next(iter(lbs.values()), None),
            'listeners': col(models.Listener),
            'pools': col(models.Pool),
            'members': col(models.Member, member_t.c.id.in_(ids) if ids is not None else None),
        }


def small_pool_members():
    """What update_health left in the DB for the members of pools of at most 20 members."""
    t = models.Member.__table__
    with engine.connect() as conn:
        small = sa.select(t.c.pool_id).group_by(t.c.pool_id).having(sa.func.count() <= 20)
        return {r[0]: r[1] for r in conn.execute(sa.select(t.c.id, t.c.operating_status).where(t.c.pool_id.in_(small)))}


def receive():
    getter = heartbeat_udp.UDPStatusGetter()
    updater = heartbeat_udp.UpdateHealthDb()
    while True:
        try:
            obj, src = getter.dorecv()
        except Exception as e:  # the receiver's own verdict on this datagram
            if 'timed out' not in str(e):
                emit({'rejected': '%s: %s' % (type(e).__name__, e)})
            continue
        pools = {k: ({'status': p.get('status'), 'members': p.get('members', {})}
                     if len(p.get('members', {})) <= 20 else
                     {'status': p.get('status'), 'member_count': len(p['members'])})
                 for k, p in obj.get('pools', {}).items()}
        LOG.records.clear()
        with write_lock:
            started = time.monotonic()
            updater.update_health(obj, src[0] if isinstance(src, tuple) else src)
            ms = round((time.monotonic() - started) * 1000, 1)
        emit({'processed': {'seq': obj.get('seq'), 'pools': pools, 'ms': ms, 'db': small_pool_members(),
                            'log': list(LOG.records)}})


threading.Thread(target=receive, daemon=True).start()
OPS = {'apply': apply, 'status': status}
emit({'ready': True})
for line in sys.stdin:
    req = json.loads(line)
    try:
        emit({'reply': True, 'ok': True, 'result': OPS[req['op']](req.get('args', {}))})
    except Exception as e:  # report every failure to the test
        emit({'reply': True, 'ok': False, 'error': '%s: %s' % (type(e).__name__, e)})
