/* SPDX-License-Identifier: MIT */
/*
 * dnp_version.h — the one version string of every SoftDNP tool: meson's
 * project version and the commit it was built from ("0.1.0-g2a3b3cf", with
 * "-dirty" when the work tree had changes; the project version alone when
 * built outside git), generated at build time (common/meson.build, vcs_tag).
 *
 * Every tool answers --version with dnp_version_print(): one line on
 * standard output, "NAME (SoftDNP) VERSION", as GNU tools and help2man
 * expect. Pure: no state, safe from any thread.
 */
#ifndef DNP_VERSION_H
#define DNP_VERSION_H

/* The version string ("0.1.0-g2a3b3cf"). Static storage. */
const char *dnp_version(void);

/* Prints "PROG (SoftDNP) VERSION" on standard output. Returns 0 (an exit status). */
int dnp_version_print(const char *prog);

#endif
