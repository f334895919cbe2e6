/* A minimal i8042 keyboard controller at ports 0x60 and 0x64.  Its only
 * real job is the reset line: the guest's `reboot -f` (with reboot=k)
 * pulses it, which ends the VM.  It answers Linux's probe well enough that
 * the driver settles (with i8042.noaux/nomux/nopnp/dumbkbd on the command
 * line). */
#ifndef COVE_I8042_H
#define COVE_I8042_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define I8042_DATA_PORT    0x60
#define I8042_COMMAND_PORT 0x64

struct i8042_state {
	uint8_t ctr;     /* controller configuration byte */
	uint8_t out[16]; /* output buffer queue */
	uint8_t out_head, out_count;
	uint8_t pending_cmd; /* a command waiting for its data byte */
};

typedef void (*i8042_reset_fn)(void *opaque);

struct i8042 {
	struct i8042_state s;
	pthread_mutex_t lock;
	i8042_reset_fn reset;
	void *opaque;
};

void i8042_init(struct i8042 *k, i8042_reset_fn reset, void *opaque);
void i8042_destroy(struct i8042 *k);
/* Bus callbacks for port 0x60 (data) and 0x64 (status/command). */
void i8042_data_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);
void i8042_cmd_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write);

#endif
