/* The snapshot directory's state file sections, as save.c writes them and
 * restore.c checks them (docs/snapshots.md, "Snapshots").  Private to
 * vmm/snapshot/. */
#ifndef COVE_SNAPSHOT_FORMAT_H
#define COVE_SNAPSHOT_FORMAT_H

#include <limits.h>
#include <stdint.h>

#include "arch/x86_64/state.h"
#include "backend/disk.h"
#include "core/vm.h"
#include "snapshot/state_file.h"

#define TAG_CONF SF_TAG('C', 'O', 'N', 'F')
#define TAG_VMST SF_TAG('V', 'M', 'S', 'T')
#define TAG_VCPU SF_TAG('V', 'C', 'P', 'U')
#define TAG_SERI SF_TAG('S', 'E', 'R', 'I')
#define TAG_KBDC SF_TAG('K', 'B', 'D', 'C')
#define TAG_MMIO SF_TAG('M', 'M', 'I', 'O')
/* A device type's own section, under the tag the device table gives it
 * (core/vm_devices.h), index = which device of the type: today only
 * virtio-net's "NETD" (the MAC), present when the VM has a NIC, whose
 * transport is then the last MMIO section. */
#define SF_TAG_STR(s) SF_TAG((s)[0], (s)[1], (s)[2], (s)[3])

#define PAGE 4096u

struct snap_disk {
	char file[PATH_MAX]; /* a name inside the snapshot, or an absolute path */
	char id[DISK_ID_LEN + 4];
	char format[8]; /* "raw" or "qcow2": never probed from guest-written data */
	uint32_t read_only;
	uint32_t in_snapshot; /* file is a frozen copy inside the snapshot dir */
	uint64_t size;
};

struct snap_conf {
	uint32_t cpus;
	uint32_t ndisks;
	uint64_t memory_bytes;
	uint32_t has_vsock;
	uint32_t ndevices; /* virtio-mmio transports, in slot order */
	uint64_t vsock_cid;
	struct snap_disk disks[VM_MAX_DISKS];
};

/* An opened snapshot (snapshot.h). */
struct snapshot {
	char dir[PATH_MAX];
	struct sf_reader sf;
	const struct snap_conf *conf;
	const struct x86_vm_state *vmst;
	int mem_fd;
	int ws_fd; /* the working-set record (common/wsrec.h), -1: none */
	char disk_paths[VM_MAX_DISKS][PATH_MAX];
};

#endif
