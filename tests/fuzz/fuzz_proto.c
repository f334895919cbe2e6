/* libFuzzer target: bytes from the host as cove-agent receives them.  The
 * input is one stream, cut into reads of varying sizes (chosen by its first
 * byte) and fed to the frame reader; every whole frame goes through the
 * request parser, the same validation the agent applies before any handler
 * runs, without the handlers' side effects.  Like the agent, a malformed
 * header ends the stream.  Every frame's payload also goes through the
 * host's reader of the agent's WATCH_EVENT (lib/agent/watch.c), the same
 * bytes from the other side. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "guest-agent/request.h"
#include "lib/agent/watch.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* Read sizes cycle through a few values derived from the first byte,
	 * so frames split at every possible point across inputs. */
	size_t cuts[4] = { 1u + (data[0] & 3u), 1u + (data[0] >> 2 & 15u), 7, 4096 };
	data++;
	size--;
	struct proto_reader r;
	proto_reader_init(&r);
	size_t off = 0;
	unsigned turn = 0;
	while (off < size) {
		size_t chunk = cuts[turn++ % 4];
		if (chunk > size - off)
			chunk = size - off;
		size_t done = 0;
		while (done < chunk) {
			size_t used;
			int e = proto_reader_feed(&r, data + off + done, chunk - done, &used);
			done += used;
			if (e < 0)
				goto out;
			if (e == 0)
				break;
			struct proto_hdr h;
			uint8_t *payload;
			proto_reader_take(&r, &h, &payload);
			struct agent_req req;
			char err[256];
			int pr = agent_req_parse(&h, payload, &req, err, sizeof(err));
			if (pr == 0 && (req.type == PROTO_EXEC || req.type == PROTO_PROC_START)) {
				/* What the handler relies on. */
				if (!req.u.exec.argv || !req.u.exec.argv[0] ||
				    !req.u.exec.argv[0][0])
					abort();
				if (req.tag && strlen(req.tag) > AGENT_TAG_MAX)
					abort();
			}
			/* Detached processes: a pid in range, input inside the frame. */
			if (pr == 0 && req.type >= PROTO_PROC_ATTACH &&
			    req.type <= PROTO_PROC_RESIZE && req.type != PROTO_PROC_LIST &&
			    req.u.proc.pid < 1)
				abort();
			if (pr == 0 && req.type == PROTO_PROC_INPUT &&
			    (req.u.proc.data != payload + 4 || req.u.proc.len + 4 != h.len))
				abort();
			/* A watch: an absolute folder. */
			if (pr == 0 && req.type == PROTO_WATCH &&
			    (!req.u.watch.path || req.u.watch.path[0] != '/'))
				abort();
			struct cove_watch_event ev;
			if (cove_watch_event_parse(payload, h.len, &ev, err, sizeof(err)) == 0 &&
			    (!ev.kind || !ev.name || !ev.name[0] || ev.name[0] == '/'))
				abort();
			cove_watch_event_free(&ev);
			agent_req_free(&req);
			free(payload);
		}
		off += chunk;
	}
out:
	proto_reader_reset(&r);
	return 0;
}
