#include "devices/serial.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Register offsets (DLAB selects the divisor latch at 0 and 1). */
enum {
	UART_RBR_THR = 0,
	UART_IER = 1,
	UART_IIR_FCR = 2,
	UART_LCR = 3,
	UART_MCR = 4,
	UART_LSR = 5,
	UART_MSR = 6,
	UART_SCR = 7,
};

#define UART_IER_RDI  0x01 /* received data available */
#define UART_IER_THRI 0x02 /* transmitter holding register empty */
#define UART_IIR_NONE 0x01
#define UART_IIR_THRI 0x02
#define UART_IIR_RDI  0x04
#define UART_IIR_FIFO 0xc0 /* FIFOs enabled (16550A) */
#define UART_LCR_DLAB 0x80
#define UART_LSR_DR   0x01
#define UART_LSR_OE   0x02
#define UART_LSR_THRE 0x20
#define UART_LSR_TEMT 0x40
#define UART_MCR_LOOP 0x10
#define UART_MSR_DCD  0x80
#define UART_MSR_DSR  0x20
#define UART_MSR_CTS  0x10

static const char panic_banner[] = "Kernel panic - not syncing: ";

void serial_init(struct serial *u, int out_fd, serial_irq_fn irq, serial_panic_fn on_panic,
                 void *opaque)
{
	memset(u, 0, sizeof(*u));
	pthread_mutex_init(&u->lock, NULL);
	console_out_init(&u->out, out_fd, 0, -1);
	u->irq = irq;
	u->on_panic = on_panic;
	u->opaque = opaque;
	u->s.lsr = UART_LSR_THRE | UART_LSR_TEMT;
	u->s.msr = UART_MSR_DCD | UART_MSR_DSR | UART_MSR_CTS;
	u->s.iir_pending = UART_IIR_NONE;
}

void serial_destroy(struct serial *u)
{
	console_out_flush(&u->out);
	pthread_mutex_destroy(&u->lock);
}

void serial_set_output(struct serial *u, int out_fd, uint64_t cap, int timer_fd)
{
	pthread_mutex_lock(&u->lock);
	console_out_flush(&u->out);
	console_out_init(&u->out, out_fd, cap, timer_fd);
	pthread_mutex_unlock(&u->lock);
}

void serial_flush_timer(struct serial *u)
{
	pthread_mutex_lock(&u->lock);
	console_out_timer(&u->out);
	pthread_mutex_unlock(&u->lock);
}

/* Recomputes the pending interrupt.  The line is edge-triggered (an
 * irqfd), so it fires when an interrupt becomes pending, or on a fresh
 * event of the same kind (edge set: a byte left THR, or THRI was enabled). */
static void update_irq(struct serial *u, bool edge)
{
	uint8_t old = u->s.iir_pending;
	uint8_t iir = UART_IIR_NONE;
	if ((u->s.ier & UART_IER_RDI) && (u->s.lsr & UART_LSR_DR))
		iir = UART_IIR_RDI;
	else if ((u->s.ier & UART_IER_THRI) && u->s.thr_interrupt)
		iir = UART_IIR_THRI;
	u->s.iir_pending = iir;
	if (iir != UART_IIR_NONE && (iir != old || edge) && u->irq)
		u->irq(u->opaque);
}

static void emit(struct serial *u, uint8_t c)
{
	console_out_put(&u->out, c);
	if (u->panic_collect) {
		if (c == '\n' || c == '\r' || u->panic_len == sizeof(u->panic_msg) - 1) {
			u->panic_msg[u->panic_len] = 0;
			u->panic_collect = false;
			if (u->on_panic)
				u->on_panic(u->opaque, u->panic_msg);
		} else if (c >= 0x20 && c < 0x7f) {
			u->panic_msg[u->panic_len++] = (char)c;
		}
		return;
	}
	if (c == (uint8_t)panic_banner[u->panic_match]) {
		if (++u->panic_match == sizeof(panic_banner) - 1) {
			u->panic_match = 0;
			u->panic_collect = true;
			u->panic_len = 0;
		}
	} else {
		u->panic_match = c == (uint8_t)panic_banner[0];
	}
}

static void rx_push(struct serial *u, uint8_t c)
{
	if (u->s.rx_count == SERIAL_FIFO_SIZE) {
		u->s.lsr |= UART_LSR_OE;
		return;
	}
	u->s.rx[(u->s.rx_head + u->s.rx_count) % SERIAL_FIFO_SIZE] = c;
	u->s.rx_count++;
	u->s.lsr |= UART_LSR_DR;
}

static uint8_t rx_pop(struct serial *u)
{
	if (u->s.rx_count == 0)
		return 0;
	uint8_t c = u->s.rx[u->s.rx_head];
	u->s.rx_head = (u->s.rx_head + 1) % SERIAL_FIFO_SIZE;
	if (--u->s.rx_count == 0)
		u->s.lsr &= (uint8_t)~UART_LSR_DR;
	return c;
}

static void serial_write(struct serial *u, uint64_t off, uint8_t v)
{
	bool edge = false;
	bool dlab = u->s.lcr & UART_LCR_DLAB;
	switch (off) {
	case UART_RBR_THR:
		if (dlab) {
			u->s.dll = v;
		} else if (u->s.mcr & UART_MCR_LOOP) {
			rx_push(u, v);
		} else {
			emit(u, v);
			u->s.thr_interrupt = true;
			edge = true;
		}
		break;
	case UART_IER:
		if (dlab) {
			u->s.dlm = v;
		} else {
			uint8_t was = u->s.ier;
			u->s.ier = v & 0x0f;
			/* Enabling THRI with an empty THR raises it at once. */
			if (!(was & UART_IER_THRI) && (v & UART_IER_THRI)) {
				u->s.thr_interrupt = true;
				edge = true;
			}
		}
		break;
	case UART_IIR_FCR:
		if (v & 0x02) { /* clear the receive FIFO */
			u->s.rx_count = 0;
			u->s.lsr &= (uint8_t)~UART_LSR_DR;
		}
		break;
	case UART_LCR:
		u->s.lcr = v;
		break;
	case UART_MCR:
		u->s.mcr = v & 0x1f;
		break;
	case UART_SCR:
		u->s.scr = v;
		break;
	default: /* LSR and MSR are read-only */
		break;
	}
	update_irq(u, edge);
}

static uint8_t serial_read(struct serial *u, uint64_t off)
{
	bool dlab = u->s.lcr & UART_LCR_DLAB;
	uint8_t v = 0;
	switch (off) {
	case UART_RBR_THR:
		v = dlab ? u->s.dll : rx_pop(u);
		break;
	case UART_IER:
		v = dlab ? u->s.dlm : u->s.ier;
		break;
	case UART_IIR_FCR:
		v = u->s.iir_pending | UART_IIR_FIFO;
		/* Reading IIR acknowledges a THR-empty interrupt. */
		if (u->s.iir_pending == UART_IIR_THRI)
			u->s.thr_interrupt = false;
		break;
	case UART_LCR:
		v = u->s.lcr;
		break;
	case UART_MCR:
		v = u->s.mcr;
		break;
	case UART_LSR:
		v = u->s.lsr;
		u->s.lsr &= (uint8_t)~UART_LSR_OE;
		break;
	case UART_MSR:
		v = u->s.msr;
		break;
	case UART_SCR:
		v = u->s.scr;
		break;
	}
	update_irq(u, false);
	return v;
}

void serial_io(void *opaque, uint64_t offset, uint8_t *data, uint32_t len, bool is_write)
{
	struct serial *u = opaque;
	if (len != 1 || offset > UART_SCR)
		return; /* the UART has byte-wide registers only */
	pthread_mutex_lock(&u->lock);
	if (is_write)
		serial_write(u, offset, data[0]);
	else
		data[0] = serial_read(u, offset);
	pthread_mutex_unlock(&u->lock);
}

size_t serial_input(struct serial *u, const uint8_t *buf, size_t len)
{
	pthread_mutex_lock(&u->lock);
	size_t room = SERIAL_FIFO_SIZE - u->s.rx_count;
	size_t n = len < room ? len : room;
	for (size_t i = 0; i < len; i++)
		rx_push(u, buf[i]);
	update_irq(u, n > 0);
	pthread_mutex_unlock(&u->lock);
	return n;
}
