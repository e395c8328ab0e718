#!/usr/bin/env bash
# Listing cost against bucket size, without HTTP: fills a bucket with EDDY_LIST_KEYS
# objects (default 1,000,000) through the catalog and times one 1000-entry page (first,
# middle, with a delimiter over 1000 common prefixes, prefix + delimiter) at 10k, 100k
# and 1M keys. bench/s3_list.py does the same end to end through the S3 API.
set -euo pipefail
cd "$(dirname "$0")/.."
EDDY_LIST_KEYS="${EDDY_LIST_KEYS:-1000000}" \
  cargo test --release -p eddy-s3gw --test list_scale -- --ignored --nocapture
