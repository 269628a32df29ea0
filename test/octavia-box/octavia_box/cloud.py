"""Client of the box's cloud process (PROTOCOL.md): one call per connection.

A fresh connection per call keeps the client free of shared state, so it is
safe in Octavia's threads (taskflow runs tasks in a pool) and survives a
restart of the cloud between two calls.
"""

import json
import os
import socket

# The cloud answers from memory; only server.create/attach_port touch the
# kernel (veths, a container). A call that takes longer than this means the
# cloud is gone or stuck, and Octavia's own retries are the better recovery.
DEFAULT_TIMEOUT = float(os.environ.get('AAT_CLOUD_TIMEOUT', '60'))
MAX_ANSWER = 16 * 1024 * 1024


class CloudError(Exception):
    """An error answered by the cloud, or no answer at all."""

    kind = 'Internal'

    def __init__(self, message, method=None):
        super().__init__(message)
        self.message = message
        self.method = method


class NotFound(CloudError):
    kind = 'NotFound'


class Conflict(CloudError):
    kind = 'Conflict'


class BadRequest(CloudError):
    kind = 'BadRequest'


class Internal(CloudError):
    kind = 'Internal'


class Unreachable(CloudError):
    """No answer: socket missing, refused, timed out or cut short."""

    kind = 'Unreachable'


_BY_KIND = {cls.kind: cls for cls in (NotFound, Conflict, BadRequest,
                                      Internal)}


def socket_path():
    path = os.environ.get('AAT_CLOUD_SOCKET')
    if not path:
        raise Unreachable('AAT_CLOUD_SOCKET is not set in this process')
    return path


def call(method, params=None, timeout=None):
    """Send one request and return its result, or raise a CloudError."""
    request = json.dumps({'method': method, 'params': params or {}})
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(DEFAULT_TIMEOUT if timeout is None else timeout)
            sock.connect(socket_path())
            sock.sendall(request.encode('utf-8') + b'\n')
            answer = _read_line(sock)
    except CloudError:
        raise
    except (OSError, ValueError) as e:
        raise Unreachable(f'{method}: no answer from the cloud: {e}',
                          method) from e
    if 'error' in answer and answer['error'] is not None:
        err = answer['error']
        cls = _BY_KIND.get(err.get('type'), Internal)
        raise cls(f"{method}: {err.get('message', '')}", method)
    return answer.get('result')


def _read_line(sock):
    chunks = []
    size = 0
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            # The answer is one line; accept it without its newline too, but
            # a close with nothing at all is a crash, never a null result.
            data = b''.join(chunks)
            if data.strip():
                return json.loads(data)
            raise Unreachable('the cloud closed the connection without '
                              'an answer')
        chunks.append(chunk)
        size += len(chunk)
        if b'\n' in chunk:
            line = b''.join(chunks).split(b'\n', 1)[0]
            return json.loads(line)
        if size > MAX_ANSWER:
            raise Unreachable('answer too long')
