#include "core/exit_hist.h"

#include <stdio.h>

void exit_hist_note(struct exit_hist *h, enum exit_hist_kind kind, uint64_t addr, bool is_write)
{
	uint32_t k = (uint32_t)kind | (is_write ? 4u : 0u);
	for (size_t i = 0; i < EXIT_HIST_SLOTS; i++) {
		struct exit_hist_slot *s = &h->slot[i];
		uint32_t sk = __atomic_load_n(&s->kind, __ATOMIC_RELAXED);
		if (sk == 0) {
			s->addr = addr;
			__atomic_store_n(&s->count, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&s->kind, k, __ATOMIC_RELEASE);
			return;
		}
		if (sk == k && s->addr == addr) {
			__atomic_store_n(&s->count, s->count + 1, __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_store_n(&h->other, h->other + 1, __ATOMIC_RELAXED);
}

uint64_t exit_hist_sum(const struct exit_hist *h, struct exit_hist_slot *out, size_t max, size_t *n)
{
	uint64_t lost = __atomic_load_n(&h->other, __ATOMIC_RELAXED);
	for (size_t i = 0; i < EXIT_HIST_SLOTS; i++) {
		const struct exit_hist_slot *s = &h->slot[i];
		uint32_t k = __atomic_load_n(&s->kind, __ATOMIC_ACQUIRE);
		if (k == 0)
			break;
		uint64_t c = __atomic_load_n(&s->count, __ATOMIC_RELAXED);
		size_t j = 0;
		while (j < *n && !(out[j].kind == k && out[j].addr == s->addr))
			j++;
		if (j == *n) {
			if (*n >= max) {
				lost += c;
				continue;
			}
			out[j] = (struct exit_hist_slot){ .addr = s->addr, .kind = k };
			(*n)++;
		}
		out[j].count += c;
	}
	return lost;
}

void exit_hist_name(const struct exit_hist_slot *s, char *buf, size_t len)
{
	snprintf(buf, len, "%s_%c:0x%llx", (s->kind & 3) == EXIT_HIST_PIO ? "pio" : "mmio",
	         (s->kind & 4) ? 'w' : 'r', (unsigned long long)s->addr);
}
