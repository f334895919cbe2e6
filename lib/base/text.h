/* Guest text on the user's terminal.  Bytes that come from a guest (agent
 * error messages, console lines, command output) must not drive the
 * terminal that cove prints them on: escape sequences can move the cursor,
 * rewrite what was shown, set the window title, reach the clipboard
 * (OSC 52) or make the terminal answer a query as if the user had typed
 * it. */
#ifndef COVE_TEXT_H
#define COVE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* text_clean() - makes guest text safe to print, in place.
 * @s: NUL-terminated text
 *
 * Keeps '\t' and '\n'; an escape sequence (ESC [ ... final, ESC ] ...
 * BEL or ESC \, ESC X) becomes one '?', and so does every other C0 byte,
 * DEL and a C1 control (UTF-8 C2 80..9F).  What cove itself prints of a
 * guest's text (error messages, the console tail) goes through this. */
void text_clean(char *s);

/* A streaming filter for a command's output shown on a terminal (not in
 * PTY mode: there the user asked for a terminal): every escape sequence
 * is dropped except SGR colour (ESC [ digits ; : m), C1 controls (UTF-8
 * C2 80..9F) become '?', every other byte passes (\r, \b and BEL included,
 * for progress bars).  A sequence may be cut across calls. */
struct text_filter {
	int state;
	size_t n;
	char seq[64];
};

void text_filter_init(struct text_filter *f);

/* text_filter() - filters len bytes of in into out.
 * @cap: room in out; 2 * len + 64 always suffices
 *
 * Return: the bytes written to out. */
size_t text_filter(struct text_filter *f, const unsigned char *in, size_t len, char *out,
                   size_t cap);

/* RFC 1123 host name: dot-separated labels of letters, digits and '-', not
 * starting or ending with '-', 1 to 63 bytes each, 253 in all. */
bool text_hostname_valid(const char *s);

#endif
