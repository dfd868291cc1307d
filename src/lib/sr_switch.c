/* sr_switch.c - the global switch stop_resume_queue_enabled (absent = on).
 *
 * On: every request is queued and the dispatchers run. Off: sr-enqueue
 * executes card requests directly (the legacy path, sr_direct.c), the
 * dispatchers claim nothing, and what is queued is kept until it is on again
 * (sr-exec re-judges every task before calling, so nothing stale runs).
 *
 * The switch lives in P:{global}:stop_resume_queue_enabled, next to its
 * audit stream (one hash tag: one script sets both). Before that it was
 * P:config:stop_resume_queue_enabled; that key is still read while the new
 * one was never set, so an upgrade keeps a switch that was off. */
#include <string.h>

#include "sr.h"

static int
switch_value(const redisReply *rep)
{
	if (rep->type != REDIS_REPLY_STRING)
		return -1; /* not set */
	return !(!strcmp(rep->str, "0") || !strcmp(rep->str, "off") || !strcmp(rep->str, "false"));
}

void
sr_switch_append(struct sr_redis *r, const struct sr_config *cfg)
{
	char key[SR_KEY_MAX], legacy[SR_KEY_MAX];
	const char *get[] = { "GET", sr_key_switch(key, cfg->prefix) };
	const char *old[] = { "GET", legacy };

	snprintf(legacy, sizeof legacy, "%s:config:stop_resume_queue_enabled", cfg->prefix);
	sr_redis_append(r, 2, get, NULL);
	sr_redis_append(r, 2, old, NULL);
}

int
sr_switch_read(struct sr_redis *r)
{
	redisReply *rep[2] = { NULL, NULL };
	int on = 1, bad = 0;

	for (int i = 0; i < 2; i++) {
		if (!(rep[i] = sr_redis_reply(r))) {
			if (i)
				freeReplyObject(rep[0]);
			return -1;
		}
		bad |= rep[i]->type == REDIS_REPLY_ERROR;
	}
	if (!bad)
		on = switch_value(rep[0]) >= 0 ? switch_value(rep[0]) : switch_value(rep[1]) != 0;
	else
		snprintf(r->errstr, sizeof r->errstr, "reading the global switch: %s",
		    (rep[0]->type == REDIS_REPLY_ERROR ? rep[0] : rep[1])->str);
	freeReplyObject(rep[0]);
	freeReplyObject(rep[1]);
	return bad ? -1 : on;
}

int
sr_switch_get(struct sr_redis *r, const struct sr_config *cfg)
{
	sr_switch_append(r, cfg);
	return sr_switch_read(r);
}

int
sr_switch_set(struct sr_redis *r, const struct sr_config *cfg, int on, const char *who,
    const char *why)
{
	char keys[SR_SWITCH_KEYS][SR_KEY_MAX], cap[24];
	/* switch.lua's keys and arguments, as its header declares them: the
	 * switch and the operators' audit stream */
	const char *argv[SR_SWITCH_KEYS + SR_SWITCH_ARGC], **a = argv + SR_SWITCH_KEYS;
	redisReply *rep;
	int rc = 0;

	sr_keys_script(keys, argv, cfg->prefix, NULL, NULL, sr_lua_switch_keys);
	snprintf(cap, sizeof cap, "%ld", cfg->audit_maxlen);
	a[SR_SWITCH_ARGV_ON] = on ? "1" : "0";
	a[SR_SWITCH_ARGV_WHO] = who;
	a[SR_SWITCH_ARGV_WHY] = why;
	a[SR_SWITCH_ARGV_AUDIT_MAX] = cap;
	sr_redis_append_script(r, SR_LUA_SWITCH, SR_SWITCH_KEYS, SR_SWITCH_KEYS + SR_SWITCH_ARGC, argv,
	    NULL);
	if (!(rep = sr_redis_reply(r)))
		return -1;
	if (rep->type == REDIS_REPLY_ERROR) {
		snprintf(r->errstr, sizeof r->errstr, "%s", rep->str);
		rc = -1;
	}
	freeReplyObject(rep);
	return rc;
}
