/* admin/config.c - sr-admin config (every setting and where it came from)
 * and switch (the global switch). */
#include <string.h>

#include "admin.h"

int
admin_switch(int argc, char **argv)
{
	const char *pos = argv[0];
	int on;

	(void)argc;
	if (strcmp(pos, "on") && strcmp(pos, "off") && strcmp(pos, "show"))
		command_usage();
	if (strcmp(pos, "show"))
		need_reason("switch");
	if (strcmp(pos, "show") && sr_switch_set(&rds, &cfg, !strcmp(pos, "on"), who, reason) < 0)
		sr_die(SR_EX_BACKEND, "cannot set the switch: %s", rds.errstr);
	if ((on = sr_switch_get(&rds, &cfg)) < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	sr_out(json_pack("{ss}", "switch", on ? "on" : "off"));
	return SR_EX_OK;
}

static void
print_setting(const char *name, const char *value, const char *from, const char *secret, void *arg)
{
	char shown[1024];

	(void)arg;
	/* A flag given to this very command beats the environment and the file;
	 * redacted as sr_config_each redacts theirs: a password in the URL
	 * must not reach the output, whoever gave it. */
	if (!strcmp(name, "SRQ_REDIS") && !strcmp(cfg.redis_from, "--redis")) {
		value = sr_url_shown(cfg.redis_url, shown, sizeof shown);
		from = "--redis";
	} else if (!strcmp(name, "SRQ_PREFIX") && strcmp(value, cfg.prefix)) {
		value = cfg.prefix;
		from = "--prefix";
	}
	/* A secret's state (never its value): a missing or unreadable one is
	 * said, not fatal; the tool that needs it fails when it does. */
	if (secret)
		sr_out(json_pack("{ss ss ss ss}", "setting", name, "value", value, "from", from,
		    "secret", secret));
	else
		sr_out(json_pack("{ss ss ss}", "setting", name, "value", value, "from", from));
}

int
admin_config(int argc, char **argv)
{
	char err[1024];

	(void)argc;
	(void)argv;
	sr_config_each(print_setting, NULL);
	/* Printed first: what it says is how to find the setting to fix. */
	if (sr_lease_check_all(&cfg, err, sizeof err) < 0) {
		fprintf(stderr, "%s: %s\n", sr_prog, err);
		return SR_EX_USAGE;
	}
	return SR_EX_OK;
}
