// The VM test image and the disk the boot tests start from
// (test/helpers/vm.ts): built by image-build/build.sh vm-test, or reused when
// its inputs did not change. A file of its own and first in test/vm, so that
// a build from scratch (about 6.5 minutes on a loaded 2-core machine) does
// not count against a boot test's time, and the boot files that run side by
// side find it built.
//
// Runs alone with `node dist/test/run.js vm/amphora-disk`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { openSync, readSync, closeSync, statSync } from 'node:fs';
import { vmImage, type VmImage } from '../helpers/vm.js';

let image: VmImage;

/** A file inside the disk image, read without mounting it. */
function debugfs(request: string): string {
  return execFileSync('debugfs', ['-R', request, image.disk], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
}

test.before(() => {
  image = vmImage();
  console.log(image.summary);
});

test('the disk is ext4 labelled as the image mounts its root (DIB fstab: LABEL=cloudimg-rootfs)', () => {
  assert.is(execFileSync('blkid', ['-o', 'value', '-s', 'LABEL', image.disk], { encoding: 'utf8' }).trim(), 'cloudimg-rootfs');
  assert.is(execFileSync('blkid', ['-o', 'value', '-s', 'TYPE', image.disk], { encoding: 'utf8' }).trim(), 'ext4');
  assert.match(debugfs('cat /etc/fstab'), /^LABEL=cloudimg-rootfs\s+\/\s+ext4\s/m);
});

test("the kernel and initramfs are the image's own /boot files", () => {
  // A bzImage has "HdrS" at 0x202 (the x86 boot protocol).
  const fd = openSync(image.kernel, 'r');
  const magic = Buffer.alloc(4);
  readSync(fd, magic, 0, 4, 0x202);
  closeSync(fd);
  assert.is(magic.toString('latin1'), 'HdrS');
  const boot = debugfs('ls -p /boot');
  assert.match(boot, /\/vmlinuz-[^/]+\//);
  assert.match(boot, /\/initrd\.img-[^/]+\//);
  assert.ok(statSync(image.initrd).size > 1e6);
});

test('first boot keeps the units as built: the preset, no stale ifupdown stanzas', () => {
  assert.match(debugfs('cat /usr/lib/systemd/system-preset/10-amphora-agent-ts.preset'), /^disable haproxy\.service$/m);
  const stanzas = debugfs('ls -p /etc/network/interfaces.d')
    .split('\n')
    .filter((l) => l.includes('/') && !/\/\.{1,2}\//.test(l));
  assert.equal(stanzas, []);
});

test.run();
