/* sr_lua_check.h - the API of sr_lua_check.c: a script's keys checked
 * against its header. */
#ifndef SR_LUA_CHECK_H
#define SR_LUA_CHECK_H

#include <stddef.h>

#include "sr_lua_gen.h"

/* Whether key (len bytes) has shape, a key's shape as a script's header
 * declares it (scripts/lua-embed): an account's key by its suffix, any
 * other from the prefix "P:", '*' any text, '|' between alternatives. */
int sr_lua_key_ok(const char *shape, const char *key, size_t len);
/* 0 when a call of script s with these nkeys keys (lens: their lengths,
 * or NULL) passes as many keys as its header declares, each of the shape
 * declared at its place; else -1 and what is wrong in err (errn bytes;
 * NULL and 0 when only the answer is wanted). */
int sr_lua_check_keys(enum sr_script s, int nkeys, const char **keys, const size_t *lens, char *err,
    size_t errn);

#endif
