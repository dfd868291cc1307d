/* sr-admin - operator commands. This version: the global switch.
 *
 *   sr-admin switch on|off|show [--reason TEXT]
 *
 * Every change is audited in P:admin_audit with who (the user from the
 * environment) and why (--reason). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "sr.h"

static const char usage[] =
"usage: sr-admin switch on|off|show [--reason TEXT]\n"
"\n"
"The global switch stop_resume_queue_enabled (absent = on):\n"
"  on    requests are queued; sr-claim and dev-eval dispatch them\n"
"  off   sr-enqueue executes card requests directly (up to 3 tries 2 s apart,\n"
"        never inside a card's interval); sr-claim and dev-eval claim nothing;\n"
"        queued commands and devices are kept, and re-judged once it is on again\n"
"Output: {\"switch\":\"on\"}\n"
"Options: --reason TEXT (recorded with the change), --redis URL, --prefix P,\n"
"  -h/--help, --version\n"
"Exit: 0 done, 2 usage, 3 Redis unavailable.\n";

int
main(int argc, char *argv[])
{
	enum { O_REASON = 1 };
	static const struct option longopts[] = {
		SR_COMMON_LONGOPTS,
		{ "reason", required_argument, NULL, O_REASON },
		{ NULL, 0, NULL, 0 },
	};
	struct sr_config cfg;
	struct sr_redis rds;
	const char *reason = "", *who = getenv("SUDO_USER");
	int c, rc, on;
	json_t *o;

	sr_prog = "sr-admin";
	sr_config_init(&cfg);
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == O_REASON)
			reason = optarg;
		else if (!sr_config_option(&cfg, c, optarg, usage))
			sr_usage(SR_EX_USAGE, usage);
	}
	if (argc - optind != 2 || strcmp(argv[optind], "switch") ||
	    (strcmp(argv[optind + 1], "on") && strcmp(argv[optind + 1], "off") &&
		strcmp(argv[optind + 1], "show"))) {
		fprintf(stderr, "%s: expected 'switch on|off|show'\n", sr_prog);
		sr_usage(SR_EX_USAGE, usage);
	}
	if (!who || !*who)
		who = getenv("USER") ? getenv("USER") : "unknown";
	if ((rc = sr_redis_connect(&rds, &cfg)) < 0)
		sr_die(rc == -2 ? SR_EX_USAGE : SR_EX_BACKEND, "%s", rds.errstr);
	if (strcmp(argv[optind + 1], "show") &&
	    sr_switch_set(&rds, &cfg, !strcmp(argv[optind + 1], "on"), who, reason) < 0)
		sr_die(SR_EX_BACKEND, "cannot set the switch: %s", rds.errstr);
	if ((on = sr_switch_get(&rds, &cfg)) < 0)
		sr_die(SR_EX_BACKEND, "%s", rds.errstr);
	o = json_pack("{ss}", "switch", on ? "on" : "off");
	sr_emit(o);
	sr_redis_close(&rds);
	return sr_finish(SR_EX_OK);
}
