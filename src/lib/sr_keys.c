/* sr_keys.c - Redis key names (the layout is documented in docs/redis.md).
 *
 * Command state lives under the account's hash tag, {carrier}, so every
 * script touches a single slot and runs unchanged on Redis Cluster. Facts are
 * keyed by card or device alone: they are read and written by plain commands,
 * never inside a script together with command state. */
#include <stdlib.h>
#include <string.h>

#include "sr.h"

char *
sr_key_account(char *buf, const char *prefix, const char *carrier, const char *suffix)
{
	snprintf(buf, SR_KEY_MAX, "%s:carrier:{%s}:%s", prefix, carrier, suffix);
	return buf;
}

int
sr_keys_account(char (*keys)[SR_KEY_MAX], const char **argv, const char *prefix,
    const char *carrier, const char *const *suffixes)
{
	return sr_keys_script(keys, argv, prefix, carrier, NULL, suffixes);
}

int
sr_keys_script(char (*keys)[SR_KEY_MAX], const char **argv, const char *prefix,
    const char *carrier, const char *id, const char *const *shapes)
{
	int n = 0;

	for (; shapes[n]; n++) {
		const char *s = shapes[n];

		if (!strchr(s, '*') && strncmp(s, "P:", 2))
			sr_key_account(keys[n], prefix, carrier, s);
		else if (!strcmp(s, "P:{global}:stop_resume_queue_enabled"))
			sr_key_switch(keys[n], prefix);
		else if (!strcmp(s, "P:{global}:admin_audit"))
			snprintf(keys[n], SR_KEY_MAX, "%s:{global}:admin_audit", prefix);
		else if (!id)
			goto none;
		else if (!strcmp(s, "card:*"))
			sr_key_card(keys[n], prefix, carrier, id);
		else if (!strcmp(s, "idle:*"))
			sr_key_idle(keys[n], prefix, carrier, id);
		else if (!strcmp(s, "wait:*"))
			sr_key_wait(keys[n], prefix, carrier, id);
		else if (!strcmp(s, "P:device_eval:{d*}:queue"))
			sr_key_shard(keys[n], prefix, sr_device_shard(id), "queue");
		else if (!strcmp(s, "P:device_eval:{d*}:dev:*"))
			sr_key_device_eval(keys[n], prefix, id, "");
		else if (!strcmp(s, "P:device_eval:{d*}:dev:*:scenes"))
			sr_key_device_eval(keys[n], prefix, id, ":scenes");
		else if (!strcmp(s, "P:device:*:lock"))
			sr_key_device_lock(keys[n], prefix, id);
		else
			goto none;
		argv[n] = keys[n];
	}
	return n;
none:
	fprintf(stderr, "%s: bug: no key of shape %s%s\n", sr_prog, shapes[n], id ? "" : " without an id");
	abort();
}

char *
sr_key_card(char *buf, const char *prefix, const char *carrier, const char *card)
{
	snprintf(buf, SR_KEY_MAX, "%s:carrier:{%s}:card:%s", prefix, carrier, card);
	return buf;
}

const char *
sr_key_idle(char *buf, const char *prefix, const char *carrier, const char *card)
{
	size_t n = strlen(card), head = n > 2 ? n - 2 : 0;

	snprintf(buf, SR_KEY_MAX, "%s:carrier:{%s}:idle:%.*s", prefix, carrier, (int)head, card);
	return card + head;
}

const char *
sr_key_wait(char *buf, const char *prefix, const char *carrier, const char *card)
{
	size_t n = strlen(card), head = n > 2 ? n - 2 : 0;

	snprintf(buf, SR_KEY_MAX, "%s:carrier:{%s}:wait:%.*s", prefix, carrier, (int)head, card);
	return card + head;
}

const char *
sr_key_idle_of(char *buf, const char *card_key)
{
	const char *p, *at = NULL;
	size_t n;

	for (p = card_key; (p = strstr(p, ":card:")); p++)
		at = p;
	if (!at || strchr(at + 6, ':') || !at[6])
		return NULL;
	n = strlen(at + 6);
	snprintf(buf, SR_KEY_MAX, "%.*s:idle:%.*s", (int)(at - card_key), card_key,
	    (int)(n > 2 ? n - 2 : 0), at + 6);
	return at + 6 + (n > 2 ? n - 2 : 0);
}

/* sr_idle_fields and sr_wait_fields, in the order of the packed values, are
 * generated from includes/idle.lua's lists (sr_lua_gen.c). */

int
sr_idle_get(const char *packed, int i, char *out, size_t n)
{
	const char *p = packed;

	for (int k = 0; k < i; k++) {
		if (!(p = strchr(p, '|')))
			return 0;
		p++;
	}
	size_t len = strcspn(p, "|");

	if (len == 0 || len >= n)
		return 0;
	memcpy(out, p, len);
	out[len] = '\0';
	return 1;
}

char *
sr_key_card_facts(char *buf, const char *prefix, const char *card)
{
	snprintf(buf, SR_KEY_MAX, "%s:card:%s:facts", prefix, card);
	return buf;
}

char *
sr_key_device_facts(char *buf, const char *prefix, const char *device)
{
	snprintf(buf, SR_KEY_MAX, "%s:device:%s:facts", prefix, device);
	return buf;
}

char *
sr_key_accounts(char *buf, const char *prefix)
{
	snprintf(buf, SR_KEY_MAX, "%s:accounts", prefix);
	return buf;
}

char *
sr_key_device_cards(char *buf, const char *prefix, const char *device)
{
	snprintf(buf, SR_KEY_MAX, "%s:device:%s:cards", prefix, device);
	return buf;
}

int
sr_device_shard(const char *device)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (const unsigned char *p = (const unsigned char *)device; *p; p++)
		h = (h ^ *p) * 16777619u;
	return (int)(h % SR_DEVICE_SHARDS);
}

char *
sr_key_shard(char *buf, const char *prefix, int shard, const char *suffix)
{
	snprintf(buf, SR_KEY_MAX, "%s:device_eval:{d%d}:%s", prefix, shard, suffix);
	return buf;
}

char *
sr_key_device_eval(char *buf, const char *prefix, const char *device, const char *suffix)
{
	snprintf(buf, SR_KEY_MAX, "%s:device_eval:{d%d}:dev:%s%s", prefix, sr_device_shard(device),
	    device, suffix);
	return buf;
}

char *
sr_key_device_lock(char *buf, const char *prefix, const char *device)
{
	snprintf(buf, SR_KEY_MAX, "%s:device:%s:lock", prefix, device);
	return buf;
}

char *
sr_key_switch(char *buf, const char *prefix)
{
	snprintf(buf, SR_KEY_MAX, "%s:{global}:stop_resume_queue_enabled", prefix);
	return buf;
}

int
sr_wait_get(const char *packed, int i, char *out, size_t n)
{
	if (sr_idle_get(packed, i, out, n))
		return 1;
	/* a scene left empty is the reason */
	return i == SR_WAIT_SCENE && sr_idle_get(packed, SR_WAIT_REASON, out, n);
}
