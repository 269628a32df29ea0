#!/usr/bin/env python3
"""Octavia in a box: the control plane (see PROTOCOL.md).

Runs inside the release matrix's root filesystem (test/rig/prepare.sh),
chrooted, inside the box's network namespace where the control plane's
address (172.31.0.2 by default) is on an interface. Starts, each in a
process group of its own with its log under --state:

  MariaDB    (own datadir, unix socket only) with the octavia database
  epmd + RabbitMQ  on 127.0.0.1:5672, node rabbit@localhost
  octavia-db-manage upgrade head
  octavia-api (uwsgi, as Debian's init script runs it), octavia-worker,
  octavia-health-manager, octavia-housekeeping

then prints one JSON line on stdout: {"ready": true, ...} once the API
answers, the worker consumes its queue and the health manager listens; or
{"ready": false, "error": ..., "log_tail": ...} and exits 1 when something
failed first. SIGTERM or SIGINT stops everything and exits 0. A service that
dies after ready is reported as one more JSON line {"exited": service, ...}.

--set SECTION.KEY=VALUE (repeatable) overrides or adds an octavia.conf option.
"""

import argparse
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

PR_SET_CHILD_SUBREAPER = 36
DB_USER = 'octavia'
DB_PASSWORD = 'octavia'
RABBIT_PORT = 5672
WORKER_QUEUE = 'octavia_provisioning_v2'
# The cloud's management network (test/octavia-box/PROTOCOL.md).
MGMT_NETWORK_ID = 'aa7b0000-0000-4000-8000-000000000001'


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--state', required=True, help='state directory (under /var/tmp/aat)')
    p.add_argument('--cloud-socket', required=True, help='AAT_CLOUD_SOCKET of every Octavia process')
    p.add_argument('--drivers', required=True, help='directory put on PYTHONPATH (octavia_box and its dist-info)')
    p.add_argument('--api-port', type=int, default=9876)
    p.add_argument('--bind-ip', default='172.31.0.2', help="the control plane's address (API, health manager)")
    p.add_argument('--set', action='append', default=[], metavar='SECTION.KEY=VALUE',
                   help='an octavia.conf option over the defaults (repeatable)')
    p.add_argument('--debug', action='store_true', help='Octavia logs at debug level')
    p.add_argument('--timeout', type=float, default=180, help='seconds to wait for ready')
    return p.parse_args()


class Failed(Exception):
    """Startup failed; carries the log to show."""

    def __init__(self, message, log=None):
        super().__init__(message)
        self.log = log


def tail(path, lines=40):
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            return b'\n'.join(f.read().splitlines()[-lines:]).decode('utf-8', 'replace')
    except OSError:
        return ''


def emit(obj):
    sys.stdout.write(json.dumps(obj) + '\n')
    sys.stdout.flush()


class Supervisor:
    """Children in process groups of their own, stopped group by group, last started first."""

    def __init__(self, logs):
        self.logs = logs
        self.children = []  # (name, Popen, log path)
        # Whatever a child leaves behind when it daemonizes becomes ours to reap and stop.
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)

    def start(self, name, argv, env=None, cwd=None):
        log = os.path.join(self.logs, f'{name}.log')
        out = open(log, 'ab')
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=env, cwd=cwd, start_new_session=True)
        out.close()
        self.children.append((name, proc, log))
        return proc

    def dead(self):
        """The first child that exited, as (name, returncode, log)."""
        for name, proc, log in self.children:
            if proc.poll() is not None:
                return name, proc.returncode, log
        return None

    def reap_orphans(self):
        for pid in self.orphans():
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass

    def orphans(self):
        """Our children that we did not start (reparented to us as subreaper)."""
        ours = {proc.pid for _, proc, _ in self.children}
        pids = []
        for tid in os.listdir('/proc/self/task'):
            try:
                with open(f'/proc/self/task/{tid}/children') as f:
                    pids += [int(p) for p in f.read().split()]
            except OSError:
                pass
        return [p for p in pids if p not in ours]

    def stop(self, grace=15.0):
        """Octavia's services together, then RabbitMQ (and epmd after it), then MariaDB last."""
        tiers = [[c for c in self.children if c[0] not in ('rabbitmq', 'epmd', 'mariadb')],
                 [c for c in self.children if c[0] == 'rabbitmq'], [c for c in self.children if c[0] == 'epmd'],
                 [c for c in self.children if c[0] == 'mariadb']]
        for tier in tiers:
            # The main process of each service first: it stops its own
            # children (uwsgi's workers, cotyledon's, the health manager's two
            # processes). A signal to the whole group at once can kill a
            # health-manager child holding the lock of the event its parent
            # then sets, and the parent waits for ever.
            for _, proc, _ in tier:
                proc.send_signal(signal.SIGTERM)
            started = time.monotonic()
            deadline = started + grace
            while time.monotonic() < deadline and any(proc.poll() is None for _, proc, _ in tier):
                time.sleep(0.05)
            # Then whatever of each group is left, with a little time to go on its own.
            for _, proc, _ in tier:
                self._signal_group(proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and any(self._group_alive(proc) for _, proc, _ in tier):
                time.sleep(0.05)
            left = [name for name, proc, _ in tier if self._group_alive(proc)]
            for _, proc, _ in tier:
                self._signal_group(proc.pid, signal.SIGKILL)
                try:
                    proc.wait(2)
                except subprocess.TimeoutExpired:
                    pass
            if tier:
                print(f'control_plane: stopped {", ".join(c[0] for c in tier)} in {time.monotonic() - started:.1f} s'
                      + (f' (killed: {", ".join(left)})' if left else ''), file=sys.stderr, flush=True)
        # What left its process group (Erlang's helpers, the disk monitor): reparented to us.
        for pid in self.orphans():
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass

    @staticmethod
    def _signal_group(pgid, sig):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass

    def _group_alive(self, proc):
        proc.poll()
        self.reap_orphans()
        try:
            # A zombie leader still counts: poll() above reaped it if it exited.
            os.killpg(proc.pid, 0)
            return True
        except ProcessLookupError:
            return False


def wait_for(what, check, deadline, sup, interval=0.1):
    """Polls check() until it returns a true value; fails early when a child died."""
    while True:
        value = check()
        if value:
            return value
        died = sup.dead()
        if died:
            name, code, log = died
            raise Failed(f'{name} exited ({code}) while waiting for {what}', log)
        if time.monotonic() > deadline:
            raise Failed(f'timed out waiting for {what}')
        sup.reap_orphans()
        time.sleep(interval)


def run(argv, log, what, env=None):
    with open(log, 'ab') as out:
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env)
    if r.returncode != 0:
        raise Failed(f'{what} failed ({r.returncode})', log)


# --- MariaDB -----------------------------------------------------------------

def first_binary(*names):
    for n in names:
        for d in ('/usr/sbin', '/usr/bin'):
            if os.access(os.path.join(d, n), os.X_OK):
                return os.path.join(d, n)
    raise Failed(f'none of {", ".join(names)} installed (test/rig/prepare.sh)')


# A 16 MiB redo log instead of 96 MiB: each box's datadir stays about 60 MiB.
SMALL_INNODB = ['--innodb-log-file-size=16M']


def start_mariadb(sup, paths):
    data = paths['mysql_data']
    if not os.path.isdir(os.path.join(data, 'mysql')):
        os.makedirs(data, exist_ok=True)
        # Root authenticates by its uid on the socket; Octavia gets a user of its own.
        run([first_binary('mariadb-install-db', 'mysql_install_db'), '--no-defaults', f'--datadir={data}',
             '--user=root', '--auth-root-authentication-method=socket', '--skip-test-db', *SMALL_INNODB],
            os.path.join(paths['logs'], 'mariadb-install-db.log'), 'mariadb-install-db')
    sup.start('mariadb', [
        first_binary('mariadbd', 'mysqld'), '--no-defaults', f'--datadir={data}', f'--socket={paths["mysql_socket"]}',
        f'--pid-file={os.path.join(paths["mysql"], "mariadbd.pid")}', '--skip-networking', '--user=root',
        '--skip-name-resolve', '--character-set-server=utf8mb4', '--collation-server=utf8mb4_general_ci',
        # Small and fast: a test database, not a durable one (Octavia's 95
        # migrations are DDL, each an fsync otherwise).
        '--innodb-buffer-pool-size=32M', '--performance-schema=OFF', '--innodb-flush-log-at-trx-commit=0',
        '--innodb-doublewrite=0', '--max-connections=500', '--open-files-limit=8192', '--aria-pagecache-buffer-size=8M', '--key-buffer-size=1M',
        '--innodb-log-buffer-size=2M', *SMALL_INNODB, f'--tmpdir={paths["mysql"]}',
        # MariaDB 11.6 and later fail a transaction that writes a row another
        # one changed since its snapshot (error 1020, "Record has changed
        # since last read"); Octavia's failover flow updates the pool from
        # two sessions and expects MySQL's older rule, as its deployments
        # on MariaDB do.
        '--skip-innodb-snapshot-isolation',
    ])


def create_database(paths, deadline, sup):
    client = first_binary('mariadb', 'mysql')
    sql = (f"CREATE DATABASE IF NOT EXISTS octavia CHARACTER SET utf8mb4; "
           f"CREATE USER IF NOT EXISTS '{DB_USER}'@'localhost' IDENTIFIED BY '{DB_PASSWORD}'; "
           f"GRANT ALL PRIVILEGES ON octavia.* TO '{DB_USER}'@'localhost';")
    base = [client, '--no-defaults', f'--socket={paths["mysql_socket"]}', '-uroot']

    def answers():
        # The socket appears when the server accepts connections.
        if not os.path.exists(paths['mysql_socket']):
            return False
        return subprocess.run(base + ['-e', 'SELECT 1'], capture_output=True).returncode == 0
    wait_for('MariaDB', answers, deadline, sup)
    run(base + ['-e', sql], os.path.join(paths['logs'], 'mariadb-client.log'), 'creating the octavia database')


# --- RabbitMQ ----------------------------------------------------------------

def start_rabbitmq(sup, paths):
    base = paths['rabbitmq']
    for d in ('mnesia', 'home'):
        os.makedirs(os.path.join(base, d), exist_ok=True)
    cookie = os.path.join(base, 'home', '.erlang.cookie')
    if not os.path.exists(cookie):
        fd = os.open(cookie, os.O_WRONLY | os.O_CREAT, 0o400)
        os.write(fd, secrets.token_hex(16).encode())
        os.close(fd)
    with open(os.path.join(base, 'enabled_plugins'), 'w') as f:
        f.write('[].\n')  # no management plugin: faster and smaller
    with open(os.path.join(base, 'rabbitmq.conf'), 'w') as f:
        f.write(f'listeners.tcp.default = 127.0.0.1:{RABBIT_PORT}\n'
                'loopback_users.guest = true\n'
                'disk_free_limit.absolute = 50MB\n')
    env = dict(os.environ, HOME=os.path.join(base, 'home'),
               RABBITMQ_NODENAME='rabbit@localhost', RABBITMQ_NODE_IP_ADDRESS='127.0.0.1',
               RABBITMQ_NODE_PORT=str(RABBIT_PORT), RABBITMQ_DIST_PORT='25672',
               RABBITMQ_MNESIA_BASE=os.path.join(base, 'mnesia'), RABBITMQ_LOG_BASE=paths['logs'],
               RABBITMQ_LOGS=os.path.join(paths['logs'], 'rabbitmq-server.log'),
               RABBITMQ_CONFIG_FILE=os.path.join(base, 'rabbitmq.conf'),
               RABBITMQ_ENABLED_PLUGINS_FILE=os.path.join(base, 'enabled_plugins'),
               RABBITMQ_PID_FILE=os.path.join(base, 'rabbitmq.pid'),
               RABBITMQ_CONF_ENV_FILE=os.path.join(base, 'rabbitmq-env.conf'),
               ERL_EPMD_ADDRESS='127.0.0.1',
               # One scheduler, no busy-waiting: two cores are shared with
               # everything else; Erlang distribution on loopback only.
               RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS='+S 1:1 +sbwt none +sbwtdcpu none +sbwtdio none '
                                                   '-kernel inet_dist_use_interface {127,0,0,1}')
    open(env['RABBITMQ_CONF_ENV_FILE'], 'a').close()
    # epmd in the foreground as our own child: the one Erlang would start
    # daemonizes out of every process group.
    sup.start('epmd', ['/usr/bin/epmd', '-address', '127.0.0.1'], env=env)
    # The script itself, not Debian's /usr/sbin wrapper that changes to the
    # rabbitmq user (the state directory is root's).
    sup.start('rabbitmq', ['/usr/lib/rabbitmq/bin/rabbitmq-server'], env=env, cwd=base)


def amqp_open():
    """True once RabbitMQ's AMQP listener answers a protocol header with Connection.Start."""
    try:
        with socket.create_connection(('127.0.0.1', RABBIT_PORT), timeout=1) as s:
            s.sendall(b'AMQP\x00\x00\x09\x01')
            return s.recv(1)[:1] == b'\x01'  # a method frame
    except OSError:
        return False


def queue_consumers(queue):
    """Consumers of a queue; 0 while it does not exist yet.

    Asked with kombu (oslo.messaging's own AMQP client) in a short-lived
    Python, so this supervisor stays small (about 10 MiB instead of 25).
    """
    probe = ('import sys, kombu\n'
             f'with kombu.Connection("amqp://guest:guest@127.0.0.1:{RABBIT_PORT}//", connect_timeout=2) as c:\n'
             '    print(c.default_channel.queue_declare(queue=sys.argv[1], passive=True)[2])\n')
    r = subprocess.run([sys.executable, '-c', probe, queue], capture_output=True, text=True, timeout=20)
    return int(r.stdout) if r.returncode == 0 and r.stdout.strip().isdigit() else 0


# --- certificates ------------------------------------------------------------

def openssl(log, *args, stdin=None):
    with open(log, 'ab') as out:
        r = subprocess.run(['openssl', *args], input=stdin, stdout=out, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise Failed(f'openssl {args[0]} failed', log)


def make_certificates(paths, passphrase):
    """Two CAs as Octavia's dual-CA guide has them.

    server_ca signs each amphora's server.pem (the local cert generator, with
    the encrypted key and its passphrase) and is what the controller checks
    the agent against; client_ca signs the controller's client.pem and goes to
    each amphora (config drive client_ca.pem) to check the controller.
    """
    d = paths['certs']
    ca = {
        'server_ca': os.path.join(d, 'server_ca.cert.pem'),
        'server_ca_key': os.path.join(d, 'server_ca.key.pem'),
        'client_ca': os.path.join(d, 'client_ca.cert.pem'),
        'client_ca_key': os.path.join(d, 'client_ca.key.pem'),
        'client_cert': os.path.join(d, 'client.pem'),
    }
    if all(os.path.exists(p) for p in ca.values()):
        return ca
    os.makedirs(d, exist_ok=True)
    log = os.path.join(paths['logs'], 'openssl.log')
    ca_ext = ['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']
    pw = f'pass:{passphrase}'
    openssl(log, 'req', '-x509', '-newkey', 'rsa:2048', '-sha256', '-days', '3650', '-subj', '/CN=octavia-box server CA',
            '-keyout', ca['server_ca_key'], '-out', ca['server_ca'], '-passout', pw, *ca_ext)
    openssl(log, 'req', '-x509', '-newkey', 'rsa:2048', '-sha256', '-days', '3650', '-subj', '/CN=octavia-box client CA',
            '-noenc', '-keyout', ca['client_ca_key'], '-out', ca['client_ca'], *ca_ext)
    key, csr, crt = (os.path.join(d, f'client.{x}') for x in ('key', 'csr', 'crt'))
    ext = os.path.join(d, 'client.ext')
    with open(ext, 'w') as f:
        f.write('basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n'
                'extendedKeyUsage=clientAuth\n')
    openssl(log, 'req', '-newkey', 'rsa:2048', '-noenc', '-subj', '/CN=octavia-box controller', '-keyout', key, '-out', csr)
    openssl(log, 'x509', '-req', '-in', csr, '-CA', ca['client_ca'], '-CAkey', ca['client_ca_key'], '-CAcreateserial',
            '-days', '3650', '-sha256', '-extfile', ext, '-out', crt)
    # The REST driver wants certificate and key in one file.
    with open(ca['client_cert'], 'w') as out:
        for part in (crt, key):
            with open(part) as f:
                out.write(f.read())
    os.chmod(ca['client_cert'], 0o600)
    return ca


# --- octavia.conf ------------------------------------------------------------

def octavia_conf(args, paths, ca, secrets_):
    """Every option the box sets, with why (options checked against Octavia 19 and 16's config.py)."""
    ip, port = args.bind_ip, args.api_port
    db_url = (f'mysql+pymysql://{DB_USER}:{DB_PASSWORD}@localhost/octavia'
              f'?unix_socket={paths["mysql_socket"]}&charset=utf8mb4')
    return {
        'DEFAULT': {
            'debug': 'true' if args.debug else 'false',
            # The RPC server name of the worker; any stable name.
            'host': 'octavia-box',
            'transport_url': f'rabbit://guest:guest@127.0.0.1:{RABBIT_PORT}/',
        },
        'api_settings': {
            # No Keystone: every request is an admin's, project_id goes in the bodies.
            'auth_strategy': 'noauth',
            'bind_host': ip,
            'bind_port': str(port),
            # Links in answers point where the API really is.
            'api_base_uri': f'http://{ip}:{port}',
        },
        'database': {'connection': db_url},
        'oslo_messaging': {'topic': 'octavia_prov'},
        'oslo_concurrency': {'lock_path': paths['locks']},
        'controller_worker': {
            'workers': '1',
            # Nova and Neutron are the box's cloud (octavia_box, through AAT_CLOUD_SOCKET).
            'compute_driver': 'octavia_box_compute',
            'network_driver': 'octavia_box_network',
            'amphora_driver': 'amphora_haproxy_rest_driver',
            # The management network's id, not its name: the worker compares
            # plugged ports' network ids with this list to tell the boot
            # network from member networks, and unplugs any other.
            'amp_boot_network_list': MGMT_NETWORK_ID,
            'amp_image_tag': 'amphora',
            'amp_flavor_id': 'box',
            'amp_secgroup_list': '',
            'loadbalancer_topology': 'SINGLE',
            # (user_data_config_drive: false is the default in 16 and 19, and
            # 19 warns that the option is deprecated: the config drive files
            # reach build() as config_drive_files either way.)
            # What the amphora checks the controller's client certificate against (config drive client_ca.pem).
            'client_ca': ca['client_ca'],
            # A container boots in seconds: poll the server every second for a minute, not every 10 s.
            'amp_active_retries': '60',
            'amp_active_wait_sec': '1',
            'amphora_delete_retries': '5',
            'amphora_delete_retry_interval': '1',
            # No notification consumer in the box.
            'event_notifications': 'false',
        },
        'task_flow': {
            # Flows run in the worker's memory (no Redis/ZooKeeper jobboard).
            'jobboard_enabled': 'false',
            'engine': 'parallel',
        },
        'certificates': {
            'cert_generator': 'local_cert_generator',
            'cert_manager': 'local_cert_manager',
            # The local cert generator signs each amphora's server.pem with this CA.
            'ca_certificate': ca['server_ca'],
            'ca_private_key': ca['server_ca_key'],
            'ca_private_key_passphrase': secrets_['ca_passphrase'],
            # The Fernet key (32 characters) amphora server certificates are stored encrypted with in the DB.
            'server_certs_key_passphrase': secrets_['server_certs_key'],
            'signing_digest': 'sha256',
            # Where the local cert manager keeps TLS listeners' certificates (no Barbican).
            'storage_path': paths['cert_storage'],
        },
        'haproxy_amphora': {
            'client_cert': ca['client_cert'],
            'server_ca': ca['server_ca'],
            # The open-files cap here (20000) makes haproxy refuse the default
            # 50000. Octavia sums its listeners' limits into the global
            # maxconn, and haproxy wants about 2.5 descriptors per connection:
            # 5000 each refused two listeners ("Cannot raise FD limit to
            # 25055"); 2000 leaves room for three.
            'default_connection_limit': '2000',
            # Waiting for a booting amphora's agent: every second for a minute (default 120 x 5 s).
            'connection_max_retries': '60',
            'connection_retry_interval': '1',
            # Calls to an ACTIVE amphora (default 15 x 2 s) and during failover (default 2 x 5 s).
            'active_connection_max_retries': '10',
            'active_connection_retry_interval': '1',
            'failover_connection_max_retries': '2',
            'failover_connection_retry_interval': '2',
            'rest_request_conn_timeout': '5',
            'rest_request_read_timeout': '60',
        },
        'health_manager': {
            'bind_ip': ip,
            'bind_port': '5555',
            # Given to each amphora (amphora-agent.conf) as where heartbeats go.
            'controller_ip_port_list': f'{ip}:5555',
            'heartbeat_interval': '3',
            'health_check_interval': '3',
            # A failover 20 s after the last heartbeat (issue 27: done in 25-35 s).
            'heartbeat_timeout': '20',
            'heartbeat_key': secrets_['heartbeat_key'],
        },
        'house_keeping': {
            # Looks for certificates to rotate every 5 s (default 3600): a test
            # makes one due by moving the amphora's cert_expiration in the DB
            # (or with --set certificates.cert_validity_time / cert_expiry_buffer).
            'cert_interval': '5',
            'cleanup_interval': '30',
        },
        'nova': {'enable_anti_affinity': 'false'},
    }


def apply_overrides(conf, overrides):
    for item in overrides:
        key, sep, value = item.partition('=')
        section, dot, name = key.partition('.')
        if not sep or not dot:
            raise Failed(f'--set {item}: expected SECTION.KEY=VALUE')
        conf.setdefault(section, {})[name] = value


def write_conf(path, conf):
    with open(path, 'w') as f:
        for section, opts in conf.items():
            f.write(f'[{section}]\n')
            for k, v in opts.items():
                f.write(f'{k} = {v}\n')
            f.write('\n')


def load_secrets(path):
    """Passphrases and keys made once per state directory (a restart on the same state keeps them)."""
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    s = {'ca_passphrase': secrets.token_hex(16), 'server_certs_key': secrets.token_hex(16),
         'heartbeat_key': secrets.token_hex(16)}
    with open(path, 'w') as f:
        json.dump(s, f)
    os.chmod(path, 0o600)
    return s


# --- Octavia -----------------------------------------------------------------

def octavia_env(args):
    env = {k: v for k, v in os.environ.items() if not k.startswith('PYTHON')}
    env.update(AAT_CLOUD_SOCKET=args.cloud_socket, PYTHONPATH=args.drivers,
               PATH='/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', LANG='C.UTF-8')
    return env


def start_octavia(sup, args, paths, conf_path):
    env = octavia_env(args)
    logs = paths['logs']

    def oslo_args(name):
        return ['--config-file', conf_path, '--log-file', os.path.join(logs, f'octavia-{name}.log')]
    # Debian runs the API under uwsgi (octavia-api's init script and
    # /etc/octavia/octavia-api-uwsgi.ini): the module octavia.wsgi.api in 19,
    # the pbr script /usr/bin/octavia-wsgi in 16. One process with threads is
    # plenty for tests; the options are the ini's that matter.
    if os.path.exists('/usr/lib/python3/dist-packages/octavia/wsgi/api.py'):
        app = ['--module', 'octavia.wsgi.api:application']
    else:
        app = ['--wsgi-file', '/usr/bin/octavia-wsgi']
    sup.start('api', [
        '/usr/bin/uwsgi', '--plugins', 'python3', '--http-socket', f'{args.bind_ip}:{args.api_port}',
        *app, '--pyargv', ' '.join(oslo_args('api')),
        '--master', '--processes', '1', '--threads', '8', '--enable-threads', '--lazy-apps', '--die-on-term',
        '--need-app', '--buffer-size', '65535', '--no-orphans', '--thunder-lock', '--procname-prefix', 'octavia-api-',
        '--env', 'OS_OSLO_MESSAGING_RABBIT__PROCESSNAME=octavia-api',
    ], env=env, cwd=paths['state'])
    for name in ('worker', 'health-manager', 'housekeeping'):
        sup.start(name, [f'/usr/bin/octavia-{name}', *oslo_args(name)], env=env, cwd=paths['state'])


def api_answers(url):
    try:
        with urllib.request.urlopen(f'{url}/v2/lbaas/loadbalancers', timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def udp_bound(ip, port):
    """True once something in this network namespace has UDP ip:port bound (/proc/net/udp)."""
    want = '%08X:%04X' % (int.from_bytes(socket.inet_aton(ip), 'little'), port)
    try:
        with open('/proc/net/udp') as f:
            return any(line.split()[1] == want for line in f.readlines()[1:])
    except OSError:
        return False


def log_has(path, text):
    try:
        with open(path, errors='replace') as f:
            return text in f.read()
    except OSError:
        return False


def octavia_version():
    try:
        from importlib import metadata
        return metadata.version('octavia')
    except Exception:  # noqa: BLE001
        return 'unknown'


def main():
    args = parse_args()
    started = time.monotonic()
    deadline = started + args.timeout
    state = os.path.abspath(args.state)
    paths = {
        'state': state,
        'logs': os.path.join(state, 'logs'),
        'mysql': os.path.join(state, 'mysql'),
        'mysql_data': os.path.join(state, 'mysql', 'data'),
        'mysql_socket': os.path.join(state, 'mysql', 'mysqld.sock'),
        'rabbitmq': os.path.join(state, 'rabbitmq'),
        'certs': os.path.join(state, 'certs'),
        'cert_storage': os.path.join(state, 'octavia', 'certificates'),
        'locks': os.path.join(state, 'octavia', 'lock'),
    }
    for key in ('logs', 'mysql', 'rabbitmq', 'certs', 'cert_storage', 'locks'):
        os.makedirs(paths[key], exist_ok=True)
    sup = Supervisor(paths['logs'])

    def on_signal(_signum, _frame):
        # Once: the stop that follows must not be interrupted by a second signal.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    url = f'http://{args.bind_ip}:{args.api_port}'
    conf_path = os.path.join(state, 'octavia.conf')
    logs = {}
    # Seconds from the start until each part answered (the ready line's "timings").
    timings = {}
    try:
        # MariaDB and RabbitMQ boot side by side while the certificates are made.
        start_mariadb(sup, paths)
        start_rabbitmq(sup, paths)
        secrets_ = load_secrets(os.path.join(state, 'secrets.json'))
        ca = make_certificates(paths, secrets_['ca_passphrase'])
        conf = octavia_conf(args, paths, ca, secrets_)
        apply_overrides(conf, args.set)
        write_conf(conf_path, conf)
        create_database(paths, deadline, sup)
        timings['mariadb'] = time.monotonic() - started
        t_db = time.monotonic()
        run(['/usr/bin/octavia-db-manage', '--config-file', conf_path, 'upgrade', 'head'],
            os.path.join(paths['logs'], 'octavia-db-manage.log'), 'octavia-db-manage upgrade head', env=octavia_env(args))
        migrations = time.monotonic() - t_db
        wait_for('RabbitMQ on 127.0.0.1:5672', amqp_open, deadline, sup)
        timings['rabbitmq'] = time.monotonic() - started
        start_octavia(sup, args, paths, conf_path)
        logs = {name: log for name, _, log in sup.children}
        for name in ('api', 'worker', 'health-manager', 'housekeeping'):
            logs[f'octavia-{name}'] = os.path.join(paths['logs'], f'octavia-{name}.log')
        wait_for(f'the API at {url}', lambda: api_answers(url), deadline, sup, 0.2)
        timings['api'] = time.monotonic() - started
        wait_for(f'the worker consuming {WORKER_QUEUE}', lambda: queue_consumers(WORKER_QUEUE) > 0, deadline, sup, 0.3)
        wait_for(f'the health manager on UDP {args.bind_ip}:5555', lambda: udp_bound(args.bind_ip, 5555), deadline, sup)
        wait_for('the health manager checking', lambda: log_has(logs['octavia-health-manager'], 'check process starts'),
                 deadline, sup)
        wait_for('housekeeping', lambda: log_has(logs['octavia-housekeeping'], 'Starting house keeping'), deadline, sup)
    except KeyboardInterrupt:
        sup.stop()
        sys.exit(0)
    except Failed as e:
        emit({'ready': False, 'error': str(e), 'log_tail': tail(e.log) if e.log else '',
              'logs': logs or {name: log for name, _, log in sup.children}})
        sup.stop()
        sys.exit(1)
    except Exception as e:  # noqa: BLE001 (anything else: reported the same way, nothing left running)
        emit({'ready': False, 'error': f'{type(e).__name__}: {e}', 'log_tail': ''})
        sup.stop()
        sys.exit(1)

    emit({
        'ready': True, 'api': url, 'startup_seconds': round(time.monotonic() - started, 1),
        'migration_seconds': round(migrations, 1), 'octavia_version': octavia_version(),
        'timings': {k: round(v, 1) for k, v in timings.items()},
        'config': conf_path,
        'ca': {'client_ca': ca['client_ca'], 'client_cert': ca['client_cert'], 'server_ca': ca['server_ca'],
               'server_ca_key': ca['server_ca_key']},
        'heartbeat_key': secrets_['heartbeat_key'],
        'db': {'socket': paths['mysql_socket'], 'name': 'octavia'},
        'pids': {name: proc.pid for name, proc, _ in sup.children},
        'logs': logs,
    })
    reported = set()
    try:
        while True:
            for name, proc, log in sup.children:
                if proc.poll() is not None and name not in reported:
                    reported.add(name)
                    emit({'exited': name, 'code': proc.returncode, 'log_tail': tail(log, 20)})
            sup.reap_orphans()
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    sup.stop()
    sys.exit(0)


if __name__ == '__main__':
    main()
