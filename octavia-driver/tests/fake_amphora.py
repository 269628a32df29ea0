"""An amphora agent double, the peer of the driver's HTTP logic.

FakeAgent listens on one loopback address with HTTPS and client
certificates, as an amphora does for the controller (Octavia's own request
code, with its amphora-id host name check, talks to it). It answers:

* `GET /`: `{"api_version": "1.0"}`, as both agents do;
* API 2.0 as docs/api-2.0.md describes it (the OpenAPI document, the spec
  GET/PUT/DELETE with ETags and If-Match, the error shape), every PUT body
  checked against the spec schema; or, with `api_2_0 = False`, a 404 for
  anything under /2.0/, as Octavia's agent does;
* the API 1.0 routes Octavia's driver calls on the update and delete paths
  (info, details, config upload, start/reload, certificates, LVS
  listeners), answered as Octavia's agent answers them.

Every request is recorded. It is not the agent: the real-agent tests are
the next part of issue 30.
"""

import datetime
import hashlib
import http.server
import json
import os
import re
import socket
import ssl
import threading

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


class Pki:
    """A CA and the certificates of a test: EC keys, valid for a day."""

    def __init__(self, directory):
        self.dir = directory
        self.ca_key = ec.generate_private_key(ec.SECP256R1())
        self.ca = self._build(_name('amphora-spec-driver test CA'),
                              self.ca_key.public_key(), ca=True)
        self.ca_pem = self.ca.public_bytes(serialization.Encoding.PEM)
        self.ca_file = self.write('ca.pem', self.ca_pem)

    def _build(self, subject, public_key, ca=False, dns=None, usage=None):
        now = datetime.datetime.now(datetime.timezone.utc)
        b = (x509.CertificateBuilder()
             .subject_name(subject)
             .issuer_name(_name('amphora-spec-driver test CA'))
             .public_key(public_key)
             .serial_number(x509.random_serial_number())
             .not_valid_before(now - datetime.timedelta(hours=1))
             .not_valid_after(now + datetime.timedelta(days=1))
             .add_extension(x509.BasicConstraints(ca=ca, path_length=None),
                            critical=True))
        # What Python 3.13's strict verification asks of a chain.
        b = b.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(public_key),
            critical=False)
        if ca:
            b = b.add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False,
                key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
        else:
            b = b.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    self.ca_key.public_key()), critical=False)
        if dns:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName(dns)]), critical=False)
        if usage:
            b = b.add_extension(x509.ExtendedKeyUsage([usage]),
                                critical=False)
        return b.sign(self.ca_key, hashes.SHA256())

    def issue(self, cn, dns=None, usage=None):
        """(certificate PEM, key PEM) for `cn`."""
        key = ec.generate_private_key(ec.SECP256R1())
        cert = self._build(_name(cn), key.public_key(), dns=dns, usage=usage)
        return (cert.public_bytes(serialization.Encoding.PEM),
                key.private_bytes(serialization.Encoding.PEM,
                                  serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))

    def write(self, name, *pems):
        path = os.path.join(self.dir, name)
        with open(path, 'wb') as f:
            f.write(b''.join(pems))
        return path

    def client_file(self):
        """Octavia's [haproxy_amphora] client_cert: certificate and key."""
        return self.write('client.pem', *self.issue(
            'controller', usage=ExtendedKeyUsageOID.CLIENT_AUTH))


def free_port(addresses):
    """A TCP port free on every address."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((addresses[0], 0))
            port = s.getsockname()[1]
        try:
            for address in addresses[1:]:
                with socket.socket() as s:
                    s.bind((address, port))
        except OSError:
            continue
        return port
    raise OSError('no port free on every address')


class FakeAgent:

    def __init__(self, address, port, pki, amphora_id, openapi, validate):
        self.address = address
        self.amphora_id = amphora_id
        self.openapi = openapi
        self.validate = validate
        self.lock = threading.Lock()
        self.reset()
        server = _Server((address, port), _Handler)
        server.agent = self
        cert, key = pki.issue(amphora_id, dns=amphora_id,
                              usage=ExtendedKeyUsageOID.SERVER_AUTH)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(pki.write(f'{amphora_id}.pem', cert, key))
        ctx.load_verify_locations(pki.ca_file)
        ctx.verify_mode = ssl.CERT_REQUIRED
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
        self.server = server
        self.thread = threading.Thread(target=server.serve_forever,
                                       daemon=True)
        self.thread.start()

    def reset(self):
        with self.lock:
            self.api_2_0 = True
            self.requests = []
            self.specs = {}  # lb id -> (spec, etag)
            self.files = {}  # (lb id, name) -> bytes
            self.configs = {}  # lb id -> haproxy.cfg uploaded by API 1.0
            self.lvs = {}  # listener id -> keepalived config (API 1.0)
            self.put_answers = []  # (status, headers, body) for next PUTs
            self.etag_serial = 0

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    # -- what the tests read --------------------------------------------------

    def calls(self):
        with self.lock:
            return [f'{m} {p}' for m, p, _h, _b in self.requests]

    def clear(self):
        with self.lock:
            self.requests = []

    def header(self, index, name):
        return self.requests[index][2].get(name.lower())

    def bump(self, lb_id):
        """Another writer changed the spec: its ETag moves."""
        with self.lock:
            spec, _etag = self.specs[lb_id]
            self.specs[lb_id] = (spec, self._new_etag())

    # -- the answers ----------------------------------------------------------

    def _new_etag(self):
        self.etag_serial += 1
        return f'"etag-{self.amphora_id}-{self.etag_serial}"'

    def handle(self, method, path, headers, body):
        with self.lock:
            self.requests.append((method, path, headers, body))
            path = re.sub('^//+', '/', path.split('?')[0])
            if path == '/' and method == 'GET':
                return 200, {}, {'api_version': '1.0'}
            if path.startswith('/2.0/'):
                if not self.api_2_0:
                    # Octavia's agent: no such route.
                    return 404, {'Content-Type': 'text/html'}, b'Not Found'
                return self._v2(method, path[len('/2.0/'):], headers, body)
            if path.startswith('/1.0/'):
                return self._v1(method, path[len('/1.0/'):], body)
            return _v1_error(404)

    def _v2(self, method, path, headers, body):
        if path == 'openapi.json' and method == 'GET':
            return 200, {}, self.openapi
        m = re.fullmatch(r'loadbalancers/([^/]+)', path)
        if not m:
            return _v2_error(404, 'not_found', 'no such API 2.0 resource')
        lb_id = m.group(1)
        current = self.specs.get(lb_id)
        if method == 'GET':
            if current is None:
                return _v2_error(404, 'not_found', f'no load balancer {lb_id}')
            return 200, {'ETag': current[1]}, {
                'spec': current[0], 'etag': current[1], 'config': ''}
        if method == 'DELETE':
            if current is None:
                return _v2_error(404, 'not_found', f'no load balancer {lb_id}')
            del self.specs[lb_id]
            for key in [k for k in self.files if k[0] == lb_id]:
                del self.files[key]
            return 204, {}, b''
        if method != 'PUT':
            return _v2_error(405, 'method_not_allowed', 'not here')
        if self.put_answers:
            return self.put_answers.pop(0)
        try:
            spec = json.loads(body)
        except ValueError as e:
            return _v2_error(400, 'invalid_json', str(e))
        problems = self.validate(spec)
        if not problems and spec.get('id') != lb_id:
            problems = [f'id: {spec.get("id")} is not {lb_id}']
        if problems:
            return _v2_error(400, 'invalid_spec', 'the spec is invalid',
                             problems)
        if_match = headers.get('if-match')
        if if_match is not None and (
                current is None if if_match == '*' else
                current is None or current[1] != if_match):
            return _v2_error(412, 'precondition_failed', 'the ETag moved',
                             etag=current[1] if current else None)
        if current is not None and current[0] == spec:
            etag, result = current[1], 'unchanged'
        else:
            etag = self._new_etag()
            result = 'started' if current is None else 'runtime'
        self.specs[lb_id] = (spec, etag)
        return 201 if current is None else 200, {'ETag': etag}, {
            'result': result, 'etag': etag, 'changes': [],
            'runtime': [], 'pending': []}

    def _v1(self, method, path, body):
        if method == 'GET' and path == 'info':
            return 200, {}, {'api_version': '1.0', 'haproxy_version': '3.0.11',
                             'hostname': self.amphora_id}
        if method == 'GET' and path == 'details':
            return 200, {}, {
                'api_version': '1.0', 'haproxy_version': '3.0.11',
                'cpu_count': 2, 'active_tuned_profiles': '',
                'memory': {'free': 1048576, 'buffers': 1024,
                           'cached': 65536}}
        m = re.fullmatch(r'loadbalancer/[^/]+/([^/]+)/haproxy', path)
        if m and method == 'PUT':
            self.configs[m.group(1)] = body.decode()
            return 202, {}, {'message': 'OK'}
        m = re.fullmatch(r'loadbalancer/([^/]+)/(start|stop|reload)', path)
        if m and method == 'PUT':
            return 202, {}, {'message': 'OK'}
        m = re.fullmatch(r'loadbalancer/([^/]+)/certificates/([^/]+)', path)
        if m:
            key = (m.group(1), m.group(2))
            if method == 'PUT':
                self.files[key] = body
                return 200, {}, {'message': 'OK'}
            if key not in self.files:
                return _v1_error(404)
            if method == 'GET':
                return 200, {}, {
                    'md5sum': hashlib.md5(self.files[key]).hexdigest()}
            if method == 'DELETE':
                del self.files[key]
                return 200, {}, {'message': 'OK'}
        m = re.fullmatch(r'listeners/[^/]+/([^/]+)/udp_listener', path)
        if m and method == 'PUT':
            self.lvs[m.group(1)] = body.decode()
            return 202, {}, {'message': 'OK'}
        m = re.fullmatch(r'listeners/([^/]+)', path)
        if m and method == 'DELETE':
            self.lvs.pop(m.group(1), None)
            return 200, {}, {'message': 'OK'}
        return _v1_error(404)


def _v2_error(status, error, message, problems=None, etag=None):
    body = {'error': error, 'message': message}
    if problems is not None:
        body['problems'] = problems
    return status, {'ETag': etag} if etag else {}, body


def _v1_error(status):
    return status, {}, {'message': 'Not Found', 'details': 'no such route'}


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class _Handler(http.server.BaseHTTPRequestHandler):

    def log_message(self, *args):
        pass

    def _any(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(length) if length else b''
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, extra, payload = self.server.agent.handle(
            self.command, self.path, headers, body)
        if not isinstance(payload, bytes):
            payload = json.dumps(payload).encode()
            extra = {'Content-Type': 'application/json', **extra}
        self.send_response(status)
        for name, value in extra.items():
            self.send_header(name, value)
        self.send_header('Content-Length', str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = _any
