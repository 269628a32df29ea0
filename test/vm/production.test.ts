// The image operators upload (diskimage.yaml's production entry: a qcow2
// with an MBR partition table, grub and DIB's fstab), booted as Nova boots
// it: SeaBIOS and the image's own grub, a 6 GB disk (a flavor's disk; the
// image is 3 GB), Octavia 19's config drive, the management NIC and then a
// hot-plugged VIP NIC. Octavia 19's client plugs the VIP, uploads and starts
// a listener, and traffic flows. The reference image (the same pipeline with
// Debian's octavia-agent in place of this agent, bench/amphora-memory's
// peer) boots beside it and takes the same steps.
//
// Building the two images takes diskimage-builder 6-10 minutes each on a
// fresh machine, so the file runs on a schedule: when image-build/ or
// diskimage.yaml differ from what test/vm/production-verified.json records
// (the inputs of the last passing run, which a passing run rewrites), or
// when AMPHORA_PRODUCTION_BOOT=1. Otherwise its one test checks that the
// record is the current inputs'.
//
// Runs alone with `AMPHORA_PRODUCTION_BOOT=1 node dist/test/run.js vm/production`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loud } from '../helpers/hooks.js';
import { AmphoraVm, seconds } from '../helpers/amphora-vm.js';
import { TestBackend } from '../helpers/backend.js';
import { LoadGenerator, waitFor } from '../helpers/load.js';
import { testPorts } from '../helpers/ports.js';
import { productionImage, referenceImage } from '../helpers/vm.js';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const RECORD = `${REPO}test/vm/production-verified.json`;
const DISK_GB = 6;

interface Verified {
  inputs: string;
  date: string;
  measured: string;
}

/** Files under a directory, relative to the repository, build output (out/) left out. */
function filesUnder(dir: string): string[] {
  return readdirSync(`${REPO}${dir}`, { withFileTypes: true }).flatMap((e) => {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory()) return path === 'image-build/out' ? [] : filesUnder(path);
    return e.isFile() ? [path] : [];
  });
}

/** The production image's build inputs: every file of image-build/ (less its output) and diskimage.yaml, by content and mode. */
function imageInputs(): string {
  const hash = createHash('sha256');
  for (const f of [...filesUnder('image-build'), 'diskimage.yaml'].sort()) {
    const path = `${REPO}${f}`;
    hash
      .update(`${f}\0${(statSync(path).mode & 0o111) !== 0 ? 'x' : '-'}\0`)
      .update(readFileSync(path))
      .update('\0');
  }
  return hash.digest('hex').slice(0, 16);
}

const inputs = imageInputs();
const recorded = JSON.parse(readFileSync(RECORD, 'utf8')) as Verified;
const due = process.env.AMPHORA_PRODUCTION_BOOT === '1' || recorded.inputs !== inputs;

if (!due) {
  test(`production image: last booted for these inputs (${inputs}) on ${recorded.date}`, () => {
    console.log(`not due: ${recorded.measured}`);
    assert.is(recorded.inputs, inputs);
  });
} else {
  const ports = testPorts('vm-production');
  // The image operators upload, and beside it the same pipeline's image with Octavia's own agent (the reference).
  const amphorae = [
    { kind: 'production', image: productionImage(), amp: new AmphoraVm('vm-production', ports, 18) },
    { kind: 'reference', image: referenceImage(), amp: new AmphoraVm('vm-production-reference', ports, 19) },
  ];
  const members: TestBackend[] = [];
  const measured: string[] = [];
  /** Steps that passed, for both images: the record is written only when all did. */
  let passedSteps = 0;

  test.before(
    loud(async () => {
      await Promise.all(amphorae.map(({ amp, image }) => amp.boot({ image, diskGb: DISK_GB })));
    }),
  );
  test.after(async () => {
    for (const { amp } of amphorae) amp.cleanup();
    for (const m of members) await m.stop();
  });

  for (const { kind, amp } of amphorae) {
    test(`${kind}: SeaBIOS booted the disk's own grub: grub's kernel line, root on the first partition, no EFI`, () => {
      const cmdline = amp.guest.run('cat /proc/cmdline').stdout.trim();
      assert.match(cmdline, /BOOT_IMAGE=\/boot\/vmlinuz-/, cmdline);
      assert.is(amp.guest.run('findmnt -no SOURCE /').stdout.trim(), '/dev/vda1');
      assert.is(amp.guest.run('test -d /sys/firmware/efi').status, 1, 'booted with UEFI');
      assert.match(amp.guest.root('cat /etc/fstab'), /^(LABEL|UUID)=\S+\s+\/\s+ext4\s/m);
      passedSteps++;
    });

    test(`${kind}: boot reaches multi-user with no failed unit; cloud-init took the config drive`, () => {
      const failed = amp.guest.run('systemctl --failed --plain --no-legend').stdout.trim();
      assert.is(failed, '', `failed units:\n${failed}`);
      const result = JSON.parse(amp.guest.root('cat /run/cloud-init/result.json')) as { v1: { datasource: string; errors: string[] } };
      assert.match(result.v1.datasource, /^DataSourceConfigDrive/);
      assert.equal(result.v1.errors, []);
      const conf = Buffer.from(amp.guest.root('base64 -w0 /etc/octavia/amphora-agent.conf'), 'base64').toString('utf8');
      assert.is(conf, amp.build.config_drive_files!['/etc/octavia/amphora-agent.conf']);
      passedSteps++;
    });

    test(`${kind}: the root filesystem grew to the ${DISK_GB} GB disk`, () => {
      const [partition, filesystem] = ['lsblk -bno SIZE /dev/vda1', 'df -B1 --output=size / | tail -1'].map((c) => Number(amp.guest.run(c).stdout.trim()));
      measured.push(`${kind}: root partition ${(partition! / 2 ** 30).toFixed(2)} GiB, filesystem ${(filesystem! / 2 ** 30).toFixed(2)} GiB`);
      assert.ok(partition! > (DISK_GB - 0.1) * 2 ** 30, `partition ${partition}`);
      assert.ok(filesystem! > (DISK_GB - 0.5) * 2 ** 30, `filesystem ${filesystem}`);
      passedSteps++;
    });

    test(`${kind}: Octavia 19's client: plug_vip after the hot-plug, upload and start a listener, traffic through the VIP`, async () => {
      measured.push(`${kind}: first answer on the agent's API ${amp.firstAnswer!.toFixed(1)} s after power-on`);
      await amp.plugVip();
      const member = await new TestBackend(`${kind}-m1`, amp.vipHost, ports.one()).start();
      members.push(member);
      await amp.peer!.call('upload_config', amp.lbId, await amp.render([member]));
      await amp.peer!.call('start_listener', amp.lbId);
      const load = new LoadGenerator(amp.vipUrl, 5, 1).start();
      try {
        await waitFor('traffic through the VIP', () => load.records.some((r) => r.status === 200), 120_000, 250);
      } finally {
        await load.stop();
      }
      assert.equal(await amp.peer!.call('get_all_listeners'), [{ status: 'ACTIVE', uuid: amp.listenerId, type: 'HTTP' }]);
      measured.push(`${kind}: first heartbeat ${amp.firstHeartbeat?.toFixed(1)} s, serving ${seconds(amp.vm!.startedAt)} s after power-on`);
      passedSteps++;
    });
  }

  test('the record: these inputs booted', () => {
    assert.is(passedSteps, 4 * amphorae.length, 'a step failed: nothing recorded');
    const record: Verified = { inputs, date: new Date().toISOString().slice(0, 10), measured: measured.join('; ') };
    writeFileSync(RECORD, `${JSON.stringify(record, null, 2)}\n`);
    console.log(`recorded in test/vm/production-verified.json: ${JSON.stringify(record)}`);
  });
}

test.run();
