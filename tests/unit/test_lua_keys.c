/* test_lua_keys.c - the keys scripts/lua-embed reads from each script's
 * header (how many, and each one's shape), which sr_redis_append_script
 * holds every call to: a caller whose keys disagree with its script's
 * header, in number or in order, is refused. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sr.h"
#include "unit.h"

static int
script(const char *name)
{
	for (int s = 0; s < SR_LUA_COUNT; s++)
		if (!strcmp(sr_lua_name[s], name))
			return s;
	return -1;
}

static int
keys_of(const char *name)
{
	int s = script(name);

	return s < 0 ? 0 : sr_lua_keys[s];
}

static int
count(const char *const *shapes)
{
	int n = 0;

	while (shapes && shapes[n])
		n++;
	return n;
}

/* Whether a call of script s with these keys passes; its refusal in err. */
static int
passes(enum sr_script s, int nkeys, const char **keys, char *err, size_t n)
{
	err[0] = '\0';
	return sr_lua_check_keys(s, nkeys, keys, NULL, err, n) == 0;
}

/* sr_redis_append_script with keys its script's header disagrees with
 * aborts, in a child; 1 when it did. */
static int
append_aborts(enum sr_script s, int nkeys, const char **argv)
{
	pid_t pid;
	int st;

	fflush(NULL);
	if ((pid = fork()) == 0) {
		struct sr_redis r;

		memset(&r, 0, sizeof r);
		if (!freopen("/dev/null", "w", stderr))
			_exit(1);
		sr_redis_append_script(&r, s, nkeys, nkeys, argv, NULL);
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

int
main(void)
{
	char keys[64][SR_KEY_MAX], err[512];
	const char *argv[64];
	int n;

	for (int s = 0; s < SR_LUA_COUNT; s++) {
		int fixed = sr_lua_keys[s] == SR_LUA_KEYS_EACH ? 0 : abs(sr_lua_keys[s]);

		CHECK(sr_lua_keys[s] != 0, "%s.lua: no KEYS declared in its header", sr_lua_name[s]);
		/* the shapes generated agree with the counts */
		CHECK(count(sr_lua_key_shapes[s]) == fixed, "%s.lua: %d key shapes, %d keys", sr_lua_name[s],
		    count(sr_lua_key_shapes[s]), fixed);
		CHECK(count(sr_lua_item_shapes[s]) == sr_lua_item_keys[s], "%s.lua: %d item shapes, %d keys",
		    sr_lua_name[s], count(sr_lua_item_shapes[s]), sr_lua_item_keys[s]);
		CHECK((sr_lua_keys[s] < 0) == (sr_lua_item_keys[s] > 0), "%s.lua: items %d, keys %d",
		    sr_lua_name[s], sr_lua_item_keys[s], sr_lua_keys[s]);
	}
	/* Fixed keys (KEYS[n]) and items' keys (KEYS[n+i.k]) as before. */
	CHECK(keys_of("confirm") == -12, "confirm: %d (12 and two per result)", keys_of("confirm"));
	CHECK(sr_lua_item_keys[SR_LUA_CONFIRM] == 2, "confirm: %d per result", sr_lua_item_keys[SR_LUA_CONFIRM]);
	CHECK(keys_of("gate") == -9, "gate: %d (9 and two per call)", keys_of("gate"));
	CHECK(keys_of("claim") == 8, "claim: %d", keys_of("claim"));
	CHECK(keys_of("enqueue") == -7, "enqueue: %d (7 and three per card)", keys_of("enqueue"));
	CHECK(sr_lua_item_keys[SR_LUA_ENQUEUE] == 3, "enqueue: %d per card", sr_lua_item_keys[SR_LUA_ENQUEUE]);
	CHECK(keys_of("facts_write") == SR_LUA_KEYS_EACH, "facts_write: %d", keys_of("facts_write"));
	CHECK(keys_of("unlock") == 1, "unlock: %d", keys_of("unlock"));
	/* The generated tables and ARGV indexes. */
	CHECK(SR_CLAIM_KEYS == 8 && SR_CLAIM_ARGC == 4, "claim: %d keys, %d args", SR_CLAIM_KEYS, SR_CLAIM_ARGC);
	CHECK(!strcmp(sr_lua_claim_keys[0], "stop_resume:high") && !strcmp(sr_lua_claim_keys[7], "edge") &&
	    !sr_lua_claim_keys[8], "claim's keys: %s .. %s", sr_lua_claim_keys[0], sr_lua_claim_keys[7]);
	CHECK(SR_CLAIM_ARGV_SETTINGS == 0 && SR_CLAIM_ARGV_SECRET == 3, "claim's ARGV");
	CHECK(SR_CONFIRM_ITEM_ARGC == 16 && SR_CONFIRM_ITEM_ARGV_CARD == 0 && SR_CONFIRM_ITEM_ARGV_AT == 15,
	    "confirm's items: %d args", SR_CONFIRM_ITEM_ARGC);
	CHECK(SR_DEVICE_FINISH_ARGV_SCENES == SR_DEVICE_FINISH_ARGC, "device_finish: the scenes last");
	/* includes/idle.lua's lists */
	CHECK(SR_IDLE_COUNT == 7 && !strcmp(sr_idle_fields[SR_IDLE_VER], "ver") &&
	    !strcmp(sr_idle_fields[SR_IDLE_SUPERSEDED], "superseded") && !sr_idle_fields[SR_IDLE_COUNT],
	    "idle fields");
	CHECK(SR_WAIT_COUNT == 5 && !strcmp(sr_wait_fields[SR_WAIT_ACTION], "action") &&
	    !strcmp(sr_wait_fields[SR_WAIT_PRIO], "prio") && !sr_wait_fields[SR_WAIT_COUNT], "wait fields");

	/* Shapes. */
	CHECK(sr_lua_key_ok("stop_resume", "p:carrier:{c1}:stop_resume", 26), "normal queue");
	CHECK(!sr_lua_key_ok("stop_resume", "p:carrier:{c1}:stop_resume:high", 31), "high for normal");
	CHECK(!sr_lua_key_ok("stop_resume:high", "p:carrier:{c1}:stop_resume", 26), "normal for high");
	CHECK(!sr_lua_key_ok("edge", "p:carrier:{c1}:limits", 21), "limits for edge");
	CHECK(!sr_lua_key_ok("edge", "p:edge", 6), "edge of no account");
	CHECK(sr_lua_key_ok("card:*", "p:carrier:{c1}:card:8986001", 27), "a card");
	CHECK(!sr_lua_key_ok("card:*", "p:carrier:{c1}:idle:89860", 25), "an idle bucket for a card");
	CHECK(sr_lua_key_ok("idle:*", "p:carrier:{c1}:idle:", 20), "the idle bucket of a short id");
	CHECK(sr_lua_key_ok("P:device:*:lock", "p:device:d1:lock", 16), "a lock");
	CHECK(!sr_lua_key_ok("P:device:*:lock", "p:device:d1:facts", 17), "facts for a lock");
	CHECK(sr_lua_key_ok("P:card:*:facts|P:device:*:facts", "p:device:d1:facts", 17), "alternatives");
	CHECK(sr_lua_key_ok("P:device_eval:{d*}:dev:*:scenes", "p:device_eval:{d3}:dev:x:scenes", 31),
	    "a device's scenes");
	CHECK(!sr_lua_key_ok("P:device_eval:{d*}:dev:*:scenes", "p:device_eval:{d3}:dev:x", 24),
	    "a device's state for its scenes");

	/* Every script's keys as the library builds them from its generated
	 * table pass; the same keys in another order do not. */
	for (int s = 0; s < SR_LUA_COUNT; s++) {
		const char *const *sh = sr_lua_key_shapes[s];
		int buildable = 1;

		for (int i = 0; sh[i]; i++)
			if (strchr(sh[i], '|') || !strcmp(sh[i], "P:*") || strstr(sh[i], ":damaged:"))
				buildable = 0;
		if (!buildable || sr_lua_keys[s] == SR_LUA_KEYS_EACH)
			continue;
		n = sr_keys_script(keys, argv, "p", "c1", "8986001234", sh);
		if (sr_lua_item_shapes[s])
			for (int k = 0; k < 3; k++)
				n += sr_keys_script(keys + n, argv + n, "p", "c1", k ? "8986005678" : "89860099",
				    sr_lua_item_shapes[s]);
		CHECK(passes(s, n, argv, err, sizeof err), "%s.lua: its own keys refused: %s", sr_lua_name[s], err);
		for (int i = 0; i + 1 < n; i++) {
			const char *t = argv[i];

			if (!strcmp(argv[i], argv[i + 1]))
				continue;
			argv[i] = argv[i + 1], argv[i + 1] = t;
			CHECK(!passes(s, n, argv, err, sizeof err), "%s.lua: KEYS[%d] and KEYS[%d] swapped, passed",
			    sr_lua_name[s], i + 1, i + 2);
			argv[i + 1] = argv[i], argv[i] = t;
		}
	}

	/* A caller out of step with claim.lua: its keys as sr-claim copied
	 * them by hand once, with two swapped (limits and seq). */
	{
		static const char *const wrong[] = { "stop_resume:high", "stop_resume", "stop_resume:bulk",
			"sr_running", "seq", "limits", "confirming", "edge", NULL };

		n = sr_keys_account(keys, argv, "p", "c1", wrong);
		CHECK(!passes(SR_LUA_CLAIM, n, argv, err, sizeof err), "claim: limits and seq swapped, passed");
		CHECK(strstr(err, "KEYS[5]") && strstr(err, "limits"), "claim: the refusal says: %s", err);
		CHECK(append_aborts(SR_LUA_CLAIM, n, argv), "claim: sr_redis_append_script took wrong keys");
		n = sr_keys_account(keys, argv, "p", "c1", sr_lua_claim_keys);
		CHECK(passes(SR_LUA_CLAIM, n, argv, err, sizeof err), "claim: %s", err);
		CHECK(!passes(SR_LUA_CLAIM, n - 1, argv, err, sizeof err), "claim: 7 keys passed");
		CHECK(strstr(err, "7 keys"), "claim: the refusal says: %s", err);
		CHECK(append_aborts(SR_LUA_CLAIM, n - 1, argv), "claim: sr_redis_append_script took 7 keys");
	}
	/* confirm.lua: a result's keys the other way round, or half of them. */
	n = sr_keys_account(keys, argv, "p", "c1", sr_lua_confirm_keys);
	n += sr_keys_script(keys + n, argv + n, "p", "c1", "8986001234", sr_lua_confirm_item_keys);
	CHECK(passes(SR_LUA_CONFIRM, n, argv, err, sizeof err), "confirm: %s", err);
	CHECK(!passes(SR_LUA_CONFIRM, n - 1, argv, err, sizeof err), "confirm: half a result's keys passed");
	CHECK(!passes(SR_LUA_CONFIRM, SR_CONFIRM_KEYS, argv, err, sizeof err), "confirm: no result passed");
	argv[n - 2] = keys[n - 1], argv[n - 1] = keys[n - 2];
	CHECK(!passes(SR_LUA_CONFIRM, n, argv, err, sizeof err), "confirm: idle bucket and card swapped, passed");
	CHECK(strstr(err, "KEYS[13]") && strstr(err, "card:*"), "confirm: the refusal says: %s", err);
	return unit_done("test_lua_keys");
}
