// The environment haproxy runs with. Under direct supervision haproxy would
// otherwise inherit the agent's whole environment, and a config reads it: the
// env() sample fetch serves a variable to clients, "${NAME}" in a config word
// expands it, and haproxy -c may print the expanded word back to the
// controller. So haproxy gets only what it needs to be found and started, and
// C messages, which the agent parses; haproxy adds its own HAPROXY_* variables.
// (Under systemd the unit starts it with systemd's clean environment.)

/** Where commands are looked up when the agent itself has no PATH. */
const FALLBACK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The whole environment of haproxy processes the agent starts: the master (and its workers), haproxy -c and the capability probe. */
export function haproxyEnvironment(): Record<string, string> {
  return { PATH: process.env.PATH || FALLBACK_PATH, LC_ALL: 'C' };
}
