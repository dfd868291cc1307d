/* sr_judge.c - the one judgment (统一判断函数); its rules are in docs/internals.md (The judgment).
 *
 * (card facts, device facts, now) -> (target, reason, command). Pure: no I/O,
 * no clock. sr-enqueue, sr-exec's re-judgment, dev-eval and the direct path
 * all call this function, so a card is judged the same way everywhere. */
#include <stdlib.h>
#include <string.h>

#include "sr.h"

struct sr_judgment
sr_judge(const struct sr_card_facts *card, const struct sr_device_facts *dev, long long now)
{
	struct sr_judgment j = { 1, SR_WANT_NONE, NULL, 0 };

	/* Rules, first match wins. */
	if (card->refunded)
		j.reason = "refund";
	else if (dev && dev->disabled)
		j.reason = "device_disabled";
	else if (dev && dev->has_pkg && dev->pkg_expires_at <= now)
		j.reason = "device_package_expired";
	else if (card->pkg_expires_at <= now)
		j.reason = "package_expired"; /* absent (0) counts as expired */
	else if (card->data_quota_kb > 0 && card->data_used_kb >= card->data_quota_kb)
		j.reason = "data_exhausted";
	else {
		j.target_stopped = 0;
		j.reason = "entitled";
	}

	j.manual = strcmp(card->stopped_by, "manual") == 0;
	if (j.target_stopped && strcmp(card->status, "stopped") != 0)
		j.want = SR_WANT_STOP;
	else if (!j.target_stopped && strcmp(card->status, "stopped") == 0 &&
	    !j.manual)
		j.want = SR_WANT_RESUME; /* a manual stop is never auto-resumed */
	return j;
}

int
sr_action_still_wanted(const char *action, const struct sr_card_facts *card,
    const struct sr_judgment *j)
{
	/* The queued command is compared with the judgment's direction, not with
	 * the cached status: the status is only our last observation, and a call
	 * the carrier answers ALREADY costs less than a card left wrong. */
	if (strcmp(action, "stop") == 0)
		return j->target_stopped;
	if (strcmp(action, "resume") == 0)
		return !j->target_stopped && strcmp(card->stopped_by, "manual") != 0;
	return 0;
}

const char *
sr_want_name(enum sr_want w)
{
	return w == SR_WANT_STOP ? "stop" : w == SR_WANT_RESUME ? "resume" : "none";
}
