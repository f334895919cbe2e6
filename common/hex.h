/* One hexadecimal digit's value, for the parsers that read %XX escapes,
 * MAC addresses and hex strings. */
#ifndef COVE_HEX_H
#define COVE_HEX_H

/* hex_digit() - the value of @c as a hexadecimal digit (either case).
 * Return: 0 to 15, or -1 when @c is not one. */
static inline int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

#endif
