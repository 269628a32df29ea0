"""Octavia amphora driver that sends load-balancer specs (the agent's API
2.0) to amphorae whose agent takes them, and behaves as Octavia's REST
driver for the others. The driver is amphora_spec_driver.driver
.AmphoraSpecDriver, registered as `amphora_spec_driver` in the
`octavia.amphora.drivers` entry-point group."""
