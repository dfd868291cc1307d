/* sr_profile_load.h - the API of sr_profile_load.c: where profiles come from. */
#ifndef SR_PROFILE_LOAD_H
#define SR_PROFILE_LOAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_profile.h"

/* The profile serving an account: the first in SRQ_PROFILES (name order)
 * whose 'accounts' match it, else the built-in default. Profiles are loaded
 * on first use; a bad profile is a configuration error (exit 2). */
const struct sr_profile *sr_profile_for(const struct sr_config *cfg, const char *carrier);
/* Every profile loaded (the default, then SRQ_PROFILES' in name order):
 * the first (p NULL), or the one after p; NULL after the last. */
const struct sr_profile *sr_profile_next(const struct sr_config *cfg, const struct sr_profile *p);
/* Free every profile loaded (sr_accounts_free). */
void sr_profiles_free(void);
/* A profile file's text (SR_PROFILE_MAX bytes at most, no NUL), or NULL with err. */
char *sr_profile_slurp(const char *path, char *err, size_t errlen);
/* from = NAME: start ps's profile from another (the built-in 'default', or a
 * profile file of ps's directory, else of the installed examples). -1 with ps->err. */
int sr_profile_from(struct sr_parse *ps, const char *name);

#endif
