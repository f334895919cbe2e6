/* 8250/16550A UART at 0x3f8, IRQ 4: the guest console.  Output goes to a
 * file descriptor (or nowhere), buffered by line and optionally capped
 * (devices/console_out.h); input arrives through serial_input() from the
 * VM's I/O loop.  The state is a plain struct for snapshots. */
#ifndef COVE_SERIAL_H
#define COVE_SERIAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "devices/console_out.h"

#define SERIAL_COM1_BASE 0x3f8
#define SERIAL_COM1_IRQ  4
#define SERIAL_FIFO_SIZE 4096

struct serial_state {
	uint8_t ier, iir_pending, lcr, mcr, lsr, msr, scr, dll, dlm;
	bool thr_interrupt; /* THR-empty interrupt pending until IIR is read */
	uint32_t rx_head, rx_count;
	uint8_t rx[SERIAL_FIFO_SIZE];
};

/* Called (with the serial lock held) when the interrupt line should fire. */
typedef void (*serial_irq_fn)(void *opaque);
/* Called when the guest kernel has printed its panic line on the console;
 * msg is the rest of that line ("VFS: Unable to mount root fs ..."). */
typedef void (*serial_panic_fn)(void *opaque, const char *msg);

struct serial {
	struct serial_state s;
	pthread_mutex_t lock;
	struct console_out out; /* runtime, not state */
	serial_irq_fn irq;
	serial_panic_fn on_panic;
	void *opaque;
	unsigned panic_match; /* bytes of the panic banner matched so far */
	bool panic_collect;   /* banner seen: collecting the rest of its line */
	unsigned panic_len;
	char panic_msg[128];
};

void serial_init(struct serial *u, int out_fd, serial_irq_fn irq, serial_panic_fn on_panic,
                 void *opaque);
/* Writes out buffered output and releases the lock. */
void serial_destroy(struct serial *u);

/* Replaces serial_init()'s plain output with a capped file and a flush
 * timer (console_out_init()); before the vCPUs run. */
void serial_set_output(struct serial *u, int out_fd, uint64_t cap, int timer_fd);

/* The output's flush timer fired (call from the loop that watches it). */
void serial_flush_timer(struct serial *u);

/* Bus callback for [SERIAL_COM1_BASE, +8). */
void serial_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

/* Queues bytes typed on the console; returns how many fitted (the rest are
 * dropped and flagged as an overrun, as a real UART would). */
size_t serial_input(struct serial *u, const uint8_t *buf, size_t len);

#endif
