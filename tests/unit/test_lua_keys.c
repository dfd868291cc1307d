/* test_lua_keys.c - the key counts scripts/lua-embed reads from each
 * script's header, which sr_redis_append_script holds every call to. */
#include <string.h>

#include "sr.h"
#include "unit.h"

static int
keys_of(const char *name)
{
	for (int s = 0; s < SR_LUA_COUNT; s++)
		if (!strcmp(sr_lua_name[s], name))
			return sr_lua_keys[s];
	return 0;
}

int
main(void)
{
	for (int s = 0; s < SR_LUA_COUNT; s++)
		CHECK(sr_lua_keys[s] != 0, "%s.lua: no KEYS found in its header", sr_lua_name[s]);
	/* KEYS[1] .. KEYS[8], ranges (KEYS[1..3]) and a list per item (KEYS[7+i]). */
	CHECK(keys_of("confirm") == -12, "confirm: %d (12 and two per result)", keys_of("confirm"));
	CHECK(keys_of("gate") == -9, "gate: %d (9 and two per call)", keys_of("gate"));
	CHECK(keys_of("claim") == 8, "claim: %d", keys_of("claim"));
	CHECK(keys_of("enqueue") == -7, "enqueue: %d (7 and two per card)", keys_of("enqueue"));
	CHECK(keys_of("unlock") == 1, "unlock: %d", keys_of("unlock"));
	return unit_done("test_lua_keys");
}
