#!/bin/sh
# SPDX-License-Identifier: MIT
# version.sh SRCDIR PROJECT_VERSION: the version of a build, as
# common/dnp_version.h states it: PROJECT_VERSION-gCOMMIT[-dirty] inside a
# git work tree (the abbreviated commit from git describe), else
# PROJECT_VERSION alone.
d=$(git -C "$1" describe --always --abbrev=7 --dirty=-dirty --exclude='*' 2>/dev/null) &&
	[ -n "$d" ] && echo "$2-g$d" || echo "$2"
