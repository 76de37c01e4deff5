/* SPDX-License-Identifier: MIT */
/* notify — sd_notify for Type=notify (notify.h), with libsystemd. */
#include <systemd/sd-daemon.h>

#include "notify.h"

void dnpd_notify_links(bool all_up)
{
	/* READY=1 again after a link came back is ignored by systemd. */
	(void)sd_notify(0, all_up ? "READY=1\nSTATUS=all links UP" :
				    "STATUS=a link is down (see dnpctl topo)");
}

void dnpd_notify_stopping(void)
{
	(void)sd_notify(0, "STOPPING=1\nSTATUS=stopping");
}
