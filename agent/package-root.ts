// The installed package's root (where templates/ lives), found from this
// module's location so it works from the repository and from an image bundle.
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// This file compiles to dist/agent/package-root.js.
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const TEMPLATES_DIR = resolve(PACKAGE_ROOT, 'templates');
