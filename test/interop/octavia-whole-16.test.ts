// Octavia whole (issue 27) on Octavia 16, the older release CI covers: the
// calls cloud-provider-openstack makes most (a fully populated create, a
// batch member update, a rolling node replacement under load). The
// failovers, rotation and topologies run on Octavia 19 (octavia-whole).
import { wholeSuite } from '../helpers/octavia-box/whole.js';

wholeSuite('trixie', 'this', ['create', 'batch', 'rolling']);
