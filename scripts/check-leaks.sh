#!/usr/bin/env bash
# The leak check is part of the sanitizer check (AddressSanitizer with
# LeakSanitizer, and UndefinedBehaviorSanitizer): this name runs it.
exec bash "$(dirname "${BASH_SOURCE[0]}")/check-sanitizers.sh" "$@"
