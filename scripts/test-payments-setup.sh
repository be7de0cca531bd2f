#!/bin/sh
# Installs localstripe (the fake Stripe server the payment-stripe tests start on a
# loopback port) if it is missing. Safe to run repeatedly.
set -e
if python3 -c "import localstripe" 2>/dev/null; then
    exit 0
fi
python3 -m pip install --quiet localstripe
python3 -c "import localstripe"
