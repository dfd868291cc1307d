/* sr_account.h - the API of sr_account.c: an account's resolved settings. */
#ifndef SR_ACCOUNT_H
#define SR_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "sr_config.h"
#include "sr_profile.h"

/* An account's resolved settings: its profile's, then the environment's. */
struct sr_account {
	char id[65];
	const struct sr_profile *p;
	long qps, running, burst, interval_ms, window_ms, lease_ms, timeout_ms, connect_timeout_ms;
	long connect_budget_ms, keepalive_ms, poll_ms, settle_ms, confirm_delay_ms;
	long alert_after, freeze_after, audit_max, aimd_memory_ms;
	long brk_failures, brk_window_ms, brk_cool_ms, brk_cool_max_ms;
	double aimd_inc, aimd_beta, aimd_noise, brk_ratio;
	long reserve_qps; /* 0: none */
	char *settings; /* the same, as the JSON the scripts take */
	struct sr_account *next;
};
/* The account's settings (cached per process). Never NULL. */
const struct sr_account *sr_account(const struct sr_config *cfg, const char *carrier);
void sr_accounts_free(void);
/* A claim's lease (SRQ_LEASE_MS) must outlast a call's whole timeout
 * (SRQ_GATEWAY_TIMEOUT_MS, or a profile's timeout_ms) by this much, so that
 * the result of a call that ran its whole timeout reaches sr-confirm before
 * another pipeline may claim the card again. */
#define SR_LEASE_MARGIN_MS 1000
/* Whether it does under profile p: 0, or -1 with err naming both settings. */
int sr_lease_check(const struct sr_config *cfg, const struct sr_profile *p, char *err, size_t errlen);
/* The same for every profile (the default one and SRQ_PROFILES'). */
int sr_lease_check_all(const struct sr_config *cfg, char *err, size_t errlen);
/* sr_lease_check_all, or exit 2 with its message (the tools that take
 * leases or make calls under them: sr-claim, sr-exec). */
void sr_lease_require(const struct sr_config *cfg);

#endif
