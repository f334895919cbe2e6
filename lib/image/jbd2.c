/* In-memory jbd2 replay (jbd2.h): the recovery passes of the kernel's
 * fs/jbd2/recovery.c as a scan that collects, then one that resolves. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "errf.h"
#include "lib/image/jbd2.h"

/* Block types, superblock fields and feature bits (include/linux/jbd2.h). */
enum { JT_DESCRIPTOR = 1, JT_COMMIT = 2, JT_SB_V1 = 3, JT_SB_V2 = 4, JT_REVOKE = 5 };
#define JS_BLOCKSIZE   0x0c
#define JS_MAXLEN      0x10
#define JS_FIRST       0x14
#define JS_SEQUENCE    0x18
#define JS_START       0x1c
#define JS_INCOMPAT    0x28
#define JF_REVOKE      0x1u
#define JF_64BIT       0x2u
#define JF_ASYNC       0x4u
#define JF_CSUM_V2     0x8u
#define JF_CSUM_V3     0x10u
#define JF_FAST_COMMIT 0x20u
#define JF_KNOWN       0x3fu
#define TAG_ESCAPE     0x1u
#define TAG_SAME_UUID  0x2u
#define TAG_LAST       0x8u
#define HDR_LEN        12
#define MIN_BLOCK      1024

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

struct tag {
	uint64_t block;
	size_t order; /* position in the log */
	uint32_t jblock;
	uint32_t seq;
	bool escaped;
};

struct revoke {
	uint64_t block;
	uint32_t seq;
};

/* The scan's state: the log's geometry and what committed so far. */
struct scan {
	uint32_t bs, first, last; /* log blocks are [first, last) */
	uint32_t incompat;
	uint64_t fs_blocks;
	struct tag *tag;
	size_t ntag, cap_tag, committed_tag;
	struct revoke *rev;
	size_t nrev, cap_rev, committed_rev;
	char *err;
	size_t errlen;
};

static uint32_t wrap(const struct scan *s, uint64_t b)
{
	uint64_t len = s->last - s->first;
	return (uint32_t)(s->first + (b - s->first) % len);
}

static int grow(void **p, size_t *cap, size_t need, size_t each)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap * 2 : 64;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * each);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static size_t tag_bytes(uint32_t incompat)
{
	if (incompat & JF_CSUM_V3)
		return 16;
	size_t sz = 12 + ((incompat & JF_CSUM_V2) ? 2 : 0);
	return (incompat & JF_64BIT) ? sz : sz - 4;
}

/* A descriptor block's tags; *used: how many data blocks follow it. */
static int descriptor(struct scan *s, const uint8_t *b, uint32_t at, uint32_t seq, uint32_t *used)
{
	size_t tb = tag_bytes(s->incompat);
	size_t end = s->bs - ((s->incompat & (JF_CSUM_V2 | JF_CSUM_V3)) ? 4 : 0);
	size_t off = HDR_LEN;
	*used = 0;
	while (off + tb <= end) {
		const uint8_t *t = b + off;
		uint64_t block = be32(t);
		uint32_t flags =
		    (s->incompat & JF_CSUM_V3) ? be32(t + 4) : (uint32_t)(t[6] << 8 | t[7]);
		if (s->incompat & JF_64BIT)
			block |= (uint64_t)be32(t + 8) << 32;
		if (*used + 1 >= s->last - s->first)
			return errf(s->err, s->errlen, -EINVAL,
			            "journal: descriptor overruns the log");
		(*used)++;
		if (block < s->fs_blocks) {
			if (grow((void **)&s->tag, &s->cap_tag, s->ntag + 1, sizeof(*s->tag)))
				return errf(s->err, s->errlen, -ENOMEM, "out of memory");
			s->tag[s->ntag] = (struct tag){ .block = block,
				                        .order = s->ntag,
				                        .jblock = wrap(s, (uint64_t)at + *used),
				                        .seq = seq,
				                        .escaped = flags & TAG_ESCAPE };
			s->ntag++;
		}
		off += tb;
		if (!(flags & TAG_SAME_UUID))
			off += 16;
		if (flags & TAG_LAST)
			break;
	}
	return 0;
}

static int revoke_block(struct scan *s, const uint8_t *b, uint32_t seq)
{
	size_t rec = (s->incompat & JF_64BIT) ? 8 : 4;
	size_t count = be32(b + HDR_LEN);
	size_t end = s->bs - ((s->incompat & (JF_CSUM_V2 | JF_CSUM_V3)) ? 4 : 0);
	if (count < 16 || count > end)
		return errf(s->err, s->errlen, -EINVAL, "journal: bad revoke block");
	for (size_t off = 16; off + rec <= count; off += rec) {
		uint64_t block =
		    rec == 8 ? (uint64_t)be32(b + off) << 32 | be32(b + off + 4) : be32(b + off);
		if (grow((void **)&s->rev, &s->cap_rev, s->nrev + 1, sizeof(*s->rev)))
			return errf(s->err, s->errlen, -ENOMEM, "out of memory");
		s->rev[s->nrev++] = (struct revoke){ .block = block, .seq = seq };
	}
	return 0;
}

/* Walks the log from start, transaction seq onwards, until a block that
 * does not continue it. */
static int walk(struct scan *s, uint32_t start, uint32_t seq, jbd2_read_fn read, void *arg,
                uint32_t *transactions)
{
	uint8_t *b = malloc(s->bs);
	if (!b)
		return errf(s->err, s->errlen, -ENOMEM, "out of memory");
	uint64_t at = start, seen = 0, len = s->last - s->first;
	int r = 0;
	while (seen < len) {
		uint32_t jb = wrap(s, at);
		if ((r = read(arg, jb, b)) < 0) {
			r = errf(s->err, s->errlen, r, "journal: block %u unreadable", jb);
			break;
		}
		if (be32(b) != JBD2_MAGIC || be32(b + 8) != seq)
			break;
		uint32_t type = be32(b + 4), used = 0;
		if (type == JT_DESCRIPTOR) {
			r = descriptor(s, b, jb, seq, &used);
		} else if (type == JT_REVOKE) {
			r = revoke_block(s, b, seq);
		} else if (type == JT_COMMIT) {
			s->committed_tag = s->ntag;
			s->committed_rev = s->nrev;
			(*transactions)++;
			seq++;
		} else {
			break;
		}
		if (r)
			break;
		at = jb + 1 + (uint64_t)used;
		seen += 1 + used;
	}
	free(b);
	return r;
}

static int by_block(const void *a, const void *b)
{
	const struct revoke *x = a, *y = b;
	return x->block < y->block ? -1 : x->block > y->block;
}

static int by_block_then_order(const void *a, const void *b)
{
	const struct tag *x = a, *y = b;
	if (x->block != y->block)
		return x->block < y->block ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Whether revokes (sorted) revoke block for transaction seq: a revoke in
 * seq or a later transaction hides the copies of seq and before. */
static bool revoked(const struct scan *s, uint64_t block, uint32_t seq)
{
	struct revoke key = { .block = block };
	if (!s->committed_rev)
		return false;
	const struct revoke *r = bsearch(&key, s->rev, s->committed_rev, sizeof(*s->rev), by_block);
	return r && (int32_t)(r->seq - seq) >= 0;
}

/* Committed copies, minus revoked ones, newest per block, sorted. */
static int resolve(struct scan *s, struct jbd2_replay *out)
{
	if (s->committed_rev)
		qsort(s->rev, s->committed_rev, sizeof(*s->rev), by_block);
	size_t w = 0; /* keep each block's newest revoke */
	for (size_t i = 0; i < s->committed_rev; i++) {
		if (w && s->rev[w - 1].block == s->rev[i].block) {
			if ((int32_t)(s->rev[i].seq - s->rev[w - 1].seq) > 0)
				s->rev[w - 1].seq = s->rev[i].seq;
			continue;
		}
		s->rev[w++] = s->rev[i];
	}
	s->committed_rev = w;
	size_t n = 0;
	for (size_t i = 0; i < s->committed_tag; i++) {
		const struct tag *t = &s->tag[i];
		if (!(s->incompat & JF_REVOKE) || !revoked(s, t->block, t->seq))
			s->tag[n++] = *t;
	}
	if (n)
		qsort(s->tag, n, sizeof(*s->tag), by_block_then_order);
	out->copy = calloc(n ? n : 1, sizeof(*out->copy));
	if (!out->copy)
		return errf(s->err, s->errlen, -ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct tag *t = &s->tag[i];
		if (out->n && out->copy[out->n - 1].block == t->block)
			out->n--; /* a later copy of the same block wins */
		out->copy[out->n++] = (struct jbd2_copy){ .block = t->block,
			                                  .jblock = t->jblock,
			                                  .escaped = t->escaped };
	}
	return 0;
}

int jbd2_replay_scan(uint32_t block_size, uint32_t journal_blocks, uint64_t fs_blocks,
                     jbd2_read_fn read, void *arg, struct jbd2_replay *out, char *err,
                     size_t errlen)
{
	memset(out, 0, sizeof(*out));
	if (block_size < MIN_BLOCK || block_size > 65536 || (block_size & (block_size - 1)))
		return errf(err, errlen, -EINVAL, "journal: bad block size %u", block_size);
	if (journal_blocks < 2)
		return errf(err, errlen, -EINVAL, "journal: too small");
	uint8_t *b = malloc(block_size);
	if (!b)
		return errf(err, errlen, -ENOMEM, "out of memory");
	int r = read(arg, 0, b);
	if (r < 0) {
		free(b);
		return errf(err, errlen, r, "journal: superblock unreadable");
	}
	uint32_t type = be32(b + 4), maxlen = be32(b + JS_MAXLEN), first = be32(b + JS_FIRST);
	uint32_t seq = be32(b + JS_SEQUENCE), start = be32(b + JS_START);
	uint32_t incompat = type == JT_SB_V2 ? be32(b + JS_INCOMPAT) : 0;
	uint32_t bs = be32(b + JS_BLOCKSIZE);
	bool magic = be32(b) == JBD2_MAGIC;
	free(b);
	if (!magic || (type != JT_SB_V1 && type != JT_SB_V2))
		return errf(err, errlen, -EINVAL, "journal: bad superblock");
	if (bs != block_size || maxlen > journal_blocks || first < 1 || first >= maxlen)
		return errf(err, errlen, -EINVAL, "journal: bad superblock geometry");
	if (incompat & ~JF_KNOWN)
		return errf(err, errlen, -ENOTSUP, "journal: unknown features 0x%x", incompat);
	if (!start)
		return 0; /* clean: everything is checkpointed */
	if (incompat & JF_FAST_COMMIT)
		return errf(err, errlen, -ENOTSUP,
		            "journal: fast-commit journals are not replayed");
	if (start < first || start >= maxlen)
		return errf(err, errlen, -EINVAL, "journal: log start outside the log");
	struct scan s = { .bs = bs,
		          .first = first,
		          .last = maxlen,
		          .incompat = incompat,
		          .fs_blocks = fs_blocks,
		          .err = err,
		          .errlen = errlen };
	r = walk(&s, start, seq, read, arg, &out->transactions);
	if (!r)
		r = resolve(&s, out);
	free(s.tag);
	free(s.rev);
	if (r)
		jbd2_replay_free(out);
	return r;
}

static int by_copy_block(const void *a, const void *b)
{
	const struct jbd2_copy *x = a, *y = b;
	return x->block < y->block ? -1 : x->block > y->block;
}

const struct jbd2_copy *jbd2_replay_find(const struct jbd2_replay *r, uint64_t block)
{
	struct jbd2_copy key = { .block = block };
	return r->n ? bsearch(&key, r->copy, r->n, sizeof(*r->copy), by_copy_block) : NULL;
}

void jbd2_replay_free(struct jbd2_replay *r)
{
	free(r->copy);
	memset(r, 0, sizeof(*r));
}
