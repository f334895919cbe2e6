/* The address check of coved's outgoing HTTP (dial.h). */
#include "daemon/http/dial.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "netrule.h"

void coved_dial_limit(CURL *c, struct coved_dial *d)
{
	curl_easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, coved_dial_open);
	curl_easy_setopt(c, CURLOPT_OPENSOCKETDATA, d);
}

/* #syscalls: socket */
curl_socket_t coved_dial_open(void *cls, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct coved_dial *d = cls;
	struct netaddr na = { .family = a->family };
	if (a->family == AF_INET)
		memcpy(na.a, &((const struct sockaddr_in *)&a->addr)->sin_addr, 4);
	else if (a->family == AF_INET6)
		memcpy(na.a, &((const struct sockaddr_in6 *)&a->addr)->sin6_addr, 16);
	bool known = a->family == AF_INET || a->family == AF_INET6;
	if (purpose != CURLSOCKTYPE_IPCXN || !known ||
	    (!d->private_ok && net_always_denied(&na, NULL, 0))) {
		if (!known || !inet_ntop(a->family, na.a, d->refused, sizeof(d->refused)))
			snprintf(d->refused, sizeof(d->refused), "family %d", a->family);
		return CURL_SOCKET_BAD;
	}
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}
