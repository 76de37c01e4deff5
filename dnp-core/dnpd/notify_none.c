/* SPDX-License-Identifier: MIT */
/* notify — built without libsystemd: nothing to tell (notify.h). */
#include "notify.h"

void dnpd_notify_links(bool all_up)
{
	(void)all_up;
}

void dnpd_notify_stopping(void)
{
}
