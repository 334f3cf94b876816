#!/bin/bash
# ABBA A/B of seed003's (b) 100 producers x 1 B cell, native fogline with Mosquitto beside it
# in every leg: the long run's build of 745d8af against a release build
# (`cargo build --release -p fogline --features full`) with direct reads in the client ($1).
# Legs land beside this script.
here=$(cd "$(dirname "$0")" && pwd)
exec bash "$here/../ab-b1.sh" "$here" "$1" fogline,mosquitto
