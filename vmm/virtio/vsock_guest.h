/* virtio-vsock's guest side (vsock_guest.c): the packet protocol on the
 * three queues and the connection state machine, above the host side
 * (vsock_host.h) and below the device's transport callbacks and public
 * API (vsock.c). */
#ifndef COVE_VIRTIO_VSOCK_GUEST_H
#define COVE_VIRTIO_VSOCK_GUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "virtio/vsock_host.h"

/* The protocol steps the host side calls back (struct vsock_proto). */
extern const struct vsock_proto vsock_guest_proto;

/* Drops every connection (a transport reset, teardown). */
void vsock_drop_all_conns(struct vsock *v);

/* Frees what was released during this callback. */
void vsock_reap(struct vsock *v);

/* Processes the guest's transmit queue. */
void vsock_process_tx(struct vsock *v);

/* Runs the queues: rx (packets for the guest), tx when it waited for rx,
 * the event queue, and interrupts. */
void vsock_run(struct vsock *v);

#endif
