#include "devices/i8042.h"

#include <string.h>

#define STATUS_OBF   0x01 /* output buffer full */
#define STATUS_SYS   0x04 /* system flag: self-test passed */
#define STATUS_CMD   0x08 /* last write was a command */
#define STATUS_KEYLK 0x10 /* keyboard not inhibited */

enum {
	CMD_READ_CTR = 0x20,
	CMD_WRITE_CTR = 0x60,
	CMD_DISABLE_AUX = 0xa7,
	CMD_ENABLE_AUX = 0xa8,
	CMD_AUX_TEST = 0xa9,
	CMD_SELF_TEST = 0xaa,
	CMD_KBD_TEST = 0xab,
	CMD_DISABLE_KBD = 0xad,
	CMD_ENABLE_KBD = 0xae,
	CMD_READ_OUTPORT = 0xd0,
	CMD_WRITE_OUTPORT = 0xd1,
	CMD_WRITE_AUX = 0xd4,
	CMD_PULSE_RESET = 0xfe,
};

void i8042_init(struct i8042 *k, i8042_reset_fn reset, void *opaque)
{
	memset(k, 0, sizeof(*k));
	pthread_mutex_init(&k->lock, NULL);
	k->reset = reset;
	k->opaque = opaque;
	k->s.ctr = 0x45; /* kbd interrupt on, system flag, translation */
}

void i8042_destroy(struct i8042 *k)
{
	pthread_mutex_destroy(&k->lock);
}

static void push(struct i8042 *k, uint8_t v)
{
	if (k->s.out_count == sizeof(k->s.out))
		return;
	k->s.out[(k->s.out_head + k->s.out_count) % sizeof(k->s.out)] = v;
	k->s.out_count++;
}

static void command(struct i8042 *k, uint8_t cmd, bool *reset)
{
	switch (cmd) {
	case CMD_READ_CTR:
		push(k, k->s.ctr);
		break;
	case CMD_WRITE_CTR:
	case CMD_WRITE_OUTPORT:
	case CMD_WRITE_AUX:
		k->s.pending_cmd = cmd;
		break;
	case CMD_SELF_TEST:
		push(k, 0x55);
		break;
	case CMD_KBD_TEST:
	case CMD_AUX_TEST:
		push(k, 0x00);
		break;
	case CMD_READ_OUTPORT:
		push(k, 0x01);
		break;
	case CMD_PULSE_RESET:
		*reset = true;
		break;
	default: /* enable/disable and the rest need no answer */
		break;
	}
}

static void data_write(struct i8042 *k, uint8_t v, bool *reset)
{
	uint8_t cmd = k->s.pending_cmd;
	k->s.pending_cmd = 0;
	switch (cmd) {
	case CMD_WRITE_CTR:
		k->s.ctr = v;
		break;
	case CMD_WRITE_OUTPORT:
		if (!(v & 0x01)) /* bit 0 low holds the CPU in reset */
			*reset = true;
		break;
	case CMD_WRITE_AUX:
		break; /* no mouse */
	default:
		push(k, 0xfa); /* ACK a keyboard command */
		break;
	}
}

void i8042_data_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct i8042 *k = opaque;
	bool reset = false;
	if (offset != 0 || len != 1)
		return;
	pthread_mutex_lock(&k->lock);
	if (is_write) {
		data_write(k, data[0], &reset);
	} else if (k->s.out_count) {
		data[0] = k->s.out[k->s.out_head];
		k->s.out_head = (uint8_t)((k->s.out_head + 1) % sizeof(k->s.out));
		k->s.out_count--;
	}
	pthread_mutex_unlock(&k->lock);
	if (reset && k->reset)
		k->reset(k->opaque);
}

void i8042_cmd_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct i8042 *k = opaque;
	bool reset = false;
	if (offset != 0 || len != 1)
		return;
	pthread_mutex_lock(&k->lock);
	if (is_write)
		command(k, data[0], &reset);
	else
		data[0] = STATUS_SYS | STATUS_KEYLK | (k->s.out_count ? STATUS_OBF : 0);
	pthread_mutex_unlock(&k->lock);
	if (reset && k->reset)
		k->reset(k->opaque);
}
