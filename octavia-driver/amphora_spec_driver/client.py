"""The agent's API 2.0, spoken through Octavia's own amphora REST client.

AmphoraAPIClient2_0 is Octavia's AmphoraAPIClientBase (mutual TLS with the
controller's client certificate, the amphora id as the server's name,
connection retries and the timeouts of the task's timeout_dict) with the
`/2.0/` prefix. The paths and answers are the agent's (docs/api-2.0.md):

* `GET /2.0/openapi.json`: the agent's description of API 2.0. An agent
  that has API 2.0 answers 200 with the spec's PUT path among its paths;
  Octavia's own agent, and this agent's images from before API 2.0, answer
  404. (The discovery document at `/` says `{"api_version": "1.0"}` on
  both: Octavia's driver reads it to build its 1.0 URLs.)
* `GET /2.0/loadbalancers/{id}`: the stored spec and its ETag; 404 when the
  agent has no spec for it.
* `PUT /2.0/loadbalancers/{id}` with `If-Match`: 201 created, 200 applied,
  412 when the ETag moved (the answer carries the current one).
* `DELETE /2.0/loadbalancers/{id}`: 204; 404 when there is nothing.
"""

import collections
import json
import threading

from octavia.amphorae.drivers.haproxy import exceptions as exc
from octavia.amphorae.drivers.haproxy import rest_api_driver

API_VERSION = '2.0'
# The path of the whole-spec PUT, as the agent's OpenAPI document names it.
SPEC_PATH = '/2.0/loadbalancers/{lb_id}'


class AgentRequestFailed(exc.APIException):
    """An API 2.0 call the agent refused or failed: its status, error word,
    message and problems (docs/api-2.0.md: the error shape)."""

    msg = ('%(request)s: the amphora agent answered %(status)s %(error)s: '
           '%(message)s')

    def __init__(self, request, response):
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            body = {'message': (response.text or '')[:500]}
        error = str(body.get('error', ''))
        problems = [str(p) for p in body.get('problems') or []]
        message = str(body.get('message', ''))
        if problems:
            message = f"{message} ({'; '.join(problems)})"
        super().__init__(request=request, status=response.status_code,
                         error=error, message=message)
        # (webob's status and status_code belong to the exception's own
        # response: the agent's answer has names of its own.)
        self.http_status = response.status_code
        self.error = error
        self.problems = problems


class _At2_0:
    """An amphora as Octavia's request() reads it (its id for the server's
    name, its management address, the version for the URL and the
    User-Agent), at version 2.0: the amphora object itself is left as it
    is, and Octavia's own discovery fills its api_version (1.0)."""

    api_version = API_VERSION

    def __init__(self, amp):
        self.id = amp.id
        self.lb_network_ip = amp.lb_network_ip


class AmphoraAPIClient2_0(rest_api_driver.AmphoraAPIClientBase):

    def request(self, method, amp, path='/', *args, **kwargs):
        return super().request(method, _At2_0(amp), path, *args, **kwargs)

    def offers_spec_api(self, amp, timeout_dict=None):
        """Whether the amphora's agent takes specs (see the module doc)."""
        try:
            r = self.get(amp, 'openapi.json', timeout_dict=timeout_dict,
                         retry_404=False)
        except exc.NotFound:
            return False
        exc.check_exception(r)
        if r.status_code != 200:
            return False
        try:
            doc = r.json()
        except ValueError:
            return False
        paths = doc.get('paths') if isinstance(doc, dict) else None
        return isinstance(paths, dict) and SPEC_PATH in paths

    def get_etag(self, amp, lb_id, timeout_dict=None):
        """The ETag of the agent's spec for `lb_id`, or None without one."""
        try:
            r = self.get(amp, f'loadbalancers/{lb_id}',
                         timeout_dict=timeout_dict, retry_404=False)
        except exc.NotFound:
            return None
        if r.status_code != 200:
            raise AgentRequestFailed(f'GET /2.0/loadbalancers/{lb_id}', r)
        etag = r.headers.get('ETag')
        if not etag:
            try:
                etag = r.json().get('etag')
            except (ValueError, AttributeError):
                etag = None
        return etag or None

    def put_spec(self, amp, lb_id, spec, etag=None, timeout_dict=None):
        """PUT the spec (If-Match: `etag` when given); the response as it
        came, for the caller to read 412 from."""
        headers = {'Content-Type': 'application/json'}
        if etag:
            headers['If-Match'] = etag
        return self.put(amp, f'loadbalancers/{lb_id}',
                        timeout_dict=timeout_dict, headers=headers,
                        data=json.dumps(spec, separators=(',', ':')))

    def delete_loadbalancer(self, amp, lb_id, timeout_dict=None):
        """Stop and remove the load balancer; nothing there is fine."""
        try:
            r = self.delete(amp, f'loadbalancers/{lb_id}',
                            timeout_dict=timeout_dict, retry_404=False)
        except exc.NotFound:
            return
        if r.status_code not in (200, 204):
            raise AgentRequestFailed(f'DELETE /2.0/loadbalancers/{lb_id}',
                                     r)


class SharedCache:
    """A bounded map shared by every driver object of the process.

    Octavia's worker makes a new amphora driver for every task, so what is
    learnt about an amphora (whether it offers API 2.0, the last ETag of a
    spec) is kept here, by amphora id, rather than on the driver object.
    Amphora ids are never reused: a failover makes a new amphora.
    """

    def __init__(self, size):
        self._size = size
        self._items = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def set(self, key, value):
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self._size:
                self._items.popitem(last=False)

    def discard(self, key):
        with self._lock:
            self._items.pop(key, None)

    def clear(self):
        with self._lock:
            self._items.clear()
