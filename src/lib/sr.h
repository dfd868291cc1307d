/* sr.h - the srq shared library (src/lib): one header per file, each
 * declaring what its .c implements, all included here. A tool includes
 * sr.h; a library file includes sr.h too, and its own header says which
 * other parts its API needs. Every tool links the objects it needs.
 *
 * Conventions: functions that can fail softly return -1 (or NULL) and leave a
 * message in the object they were given (err/errstr); sr_die() is only for
 * usage and configuration errors, where the tool cannot start at all.
 */
#ifndef SR_H
#define SR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#define SR_VERSION "0.2.0"

/* Exit codes, the same for every tool (README: Exit codes). */
enum {
	SR_EX_OK = 0,      /* all done */
	SR_EX_REJECTED = 1, /* some input lines rejected, the rest processed */
	SR_EX_USAGE = 2,   /* usage or configuration error */
	SR_EX_BACKEND = 3, /* Redis or the gateway unavailable */
	SR_EX_HELD = 4,    /* sr-claim --until-empty: what is left is held (a pause, a breaker) */
};

#include "sr_util.h"
#include "sr_batch.h"
#include "sr_time.h"
#include "sr_dispatch.h"
#include "sr_config.h"
#include "sr_redis.h"
#include "sr_node.h"
#include "sr_pipe.h"
#include "sr_lua_check.h"
#include "sr_replicas.h"
#include "sr_cluster.h"
#include "sr_sentinel.h"
#include "sr_keys.h"
#include "sr_jsonl.h"
#include "sr_switch.h"
#include "sr_lock.h"
#include "sr_csv.h"
#include "sr_valid.h"
#include "sr_facts.h"
#include "sr_facts_write.h"
#include "sr_judge.h"
#include "sr_why.h"
#include "sr_profile.h"
#include "sr_rule.h"
#include "sr_profile_load.h"
#include "sr_profile_check.h"
#include "sr_account.h"
#include "sr_template.h"
#include "sr_secret.h"
#include "sr_answer.h"
#include "sr_outcome.h"
#include "sr_gateway.h"
#include "sr_pace.h"
#include "sr_late.h"
#include "sr_request.h"
#include "sr_auth.h"
#include "sr_http.h"
#include "sr_auth_token.h"
#include "sr_edge_check.h"
#include "sr_sign.h"
#include "sr_profile_test.h"
#include "sr_redact.h"
#include "sr_clock.h"
#include "sr_command.h"
#include "sr_direct.h"
#include "sr_task.h"

#endif
