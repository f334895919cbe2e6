/* A sandbox as the API shows it (view.h). */
#include "daemon/sandboxes/view.h"

#include "clock.h"
#include "daemon/sandboxes/sandbox_priv.h"
#include "daemon/sandboxes/state.h"

static json_t *iso_time(int64_t ms)
{
	char buf[CLOCK_RFC3339_LEN];
	clock_rfc3339(ms, buf, sizeof(buf));
	return json_string(buf);
}

json_t *coved_sb_json(struct coved_sb *sb, bool with_token)
{
	pthread_mutex_lock(&sb->mu);
	json_t *net = json_object();
	json_t *ia = sb->network ? json_object_get(sb->network, "allow_internet_access") : NULL;
	if (sb->network) {
		json_t *a = json_object_get(sb->network, "allowOut");
		json_t *dn = json_object_get(sb->network, "denyOut");
		if (a)
			json_object_set(net, "allowOut", a);
		if (dn)
			json_object_set(net, "denyOut", dn);
	}
	json_object_set_new(net, "allowPublicTraffic", json_boolean(!sb->traffic[0]));
	json_t *o = json_pack(
	    "{s:s, s:s?, s:s?, s:s, s:o, s:o, s:s, s:i, s:I, s:s, s:O, s:s?, s:b, s:o, "
	    "s:{s:s, s:b}}",
	    "sandboxID", sb->id, "templateID", sb->template_id, "alias", sb->template_id,
	    "clientID", "cove", "startedAt", iso_time(sb->started_ms), "endAt",
	    iso_time(sb->end_ms), "state", coved_state_name(sb->state), "cpuCount", (int)sb->cpus,
	    "memoryMB", (json_int_t)sb->memory_mib, "envdVersion", COVED_ENVD_VERSION, "metadata",
	    sb->metadata, "domain", sb->d->cfg.domain, "allowInternetAccess",
	    sb->d->cfg.network && (!ia || json_is_true(ia)), "network", net, "lifecycle",
	    "onTimeout", sb->on_timeout == COVED_ON_TIMEOUT_PAUSE ? "pause" : "kill", "autoResume",
	    sb->auto_resume);
	/* Cove's: why the state is what it is, and the idle timeout. */
	if (o && sb->state_why[0])
		json_object_set_new(o, "stateReason", json_string(sb->state_why));
	if (o && sb->trace_id[0])
		json_object_set_new(o, "traceId", json_string(sb->trace_id));
	if (o && sb->idle_s)
		json_object_set_new(o, "idleTimeout", json_integer(sb->idle_s));
	if (o && with_token)
		json_object_set_new(o, "envdAccessToken", json_string(sb->token));
	if (o && with_token && sb->traffic[0])
		json_object_set_new(o, "trafficAccessToken", json_string(sb->traffic));
	if (o && sb->state == COVED_SB_DEAD && sb->dead_why)
		json_object_set_new(o, "deadReason", json_string(sb->dead_why));
	pthread_mutex_unlock(&sb->mu);
	return o;
}
