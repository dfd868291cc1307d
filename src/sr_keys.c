/* sr_keys.c - Redis key names (the layout is documented in README.md).
 *
 * Command state lives under the account's hash tag, {carrier}, so every
 * script touches a single slot and runs unchanged on Redis Cluster. Facts are
 * keyed by card or device alone: they are read and written by plain commands,
 * never inside a script together with command state. */
#include "sr.h"

char *
sr_key_account(char *buf, const char *prefix, const char *carrier, const char *suffix)
{
	snprintf(buf, SR_KEY_MAX, "%s:carrier:{%s}:%s", prefix, carrier, suffix);
	return buf;
}

char *
sr_key_card(char *buf, const char *prefix, const char *carrier, const char *card)
{
	snprintf(buf, SR_KEY_MAX, "%s:carrier:{%s}:card:%s", prefix, carrier, card);
	return buf;
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
