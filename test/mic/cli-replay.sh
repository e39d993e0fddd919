#!/usr/bin/env bash
# Replays the request sequence of TelenorStartIoT/mic-cli-bash and reads every
# answer the way it does: as text, broken at each comma, then grep, awk -F: and
# sed, with its length checks made by bash's [[ < ]] (which compares strings).
# Written for dms's compatibility tests; prints what it extracted as key=value.
#
# in: MANIFEST_URL (the manifest address, with ?hostname=), MIC_USER, MIC_PASSWORD,
#     THING_NAME, THING_TYPE, THING_DOMAIN, CONNECT_TO (curl --connect-to, so a
#     port-less ApiGatewayRootUrl reaches the test's port)
set -u

fetch() { curl --silent --connect-to "$CONNECT_TO" "$@"; }
# One line per comma-separated piece of the answer.
pieces() { sed 's/,/\n/g'; }

answer=$(fetch -X GET "$MANIFEST_URL")
if [[ "$answer" == "{}" ]]; then echo "error=no-manifest"; exit 1; fi
# Up to the second colon only: a root URL with a port would lose it here.
base=$(echo $answer | pieces | grep "ApiGatewayRootUrl" | awk -F: '{print $2":"$3}' | sed 's/"//g')
base="$base/prod"
echo "base=$base"

answer=$(fetch -X GET "$base/metadata/manifest")
apiKey=$(echo $answer | pieces | grep "ApiKey" | awk -F: '{print $2}' | sed 's/"//g')
if [[ ${#apiKey} < 40 ]]; then echo "error=short-api-key"; exit 1; fi
echo "apiKey=$apiKey"

payload='{"userName":"'"$MIC_USER"'","password":"'"$MIC_PASSWORD"'"}'
answer=$(fetch -X POST "$base/auth/login" -H "x-api-key: $apiKey" -H "content-type: application/json" --data-raw "$payload")
message=$(echo "$answer" | pieces | grep "message" | awk -F: '{print $2}' | sed 's/"//g' | sed 's/}//g')
if [[ "$message" == "Forbidden" ]]; then echo "error=forbidden"; exit 1; fi
messageKey=$(echo "$answer" | pieces | grep "messageKey" | awk -F: '{print $2}' | sed 's/"//g' | sed 's/}//g')
if [[ "$messageKey" == "INVALID_LOGIN" ]]; then echo "error=invalid-login"; exit 1; fi
token=$(echo "$answer" | pieces | grep "token" | awk -F: '{print $2}' | sed 's/"//g')
if [[ ${#token} < 1386 ]]; then echo "error=short-token length=${#token}"; exit 1; fi
echo "token=$token"

# List Things, with the body exactly as the CLI sends it (a stray '}' makes it not JSON) ...
asSent='{"query": {"size": 1}},"type": "thing,sub_thing"}'
answer=$(fetch -X POST "$base/things/find" -H "Authorization:$token" -H "x-api-key: $apiKey" -H "content-type: application/json" --data "$asSent")
echo "listAsSentKey=$(echo "$answer" | pieces | grep "messageKey" | awk -F: '{print $2}' | sed 's/"//g' | sed 's/}//g')"
# ... and as it means it.
meant='{"query": {"size": 1},"type": "thing,sub_thing"}'
answer=$(fetch -X POST "$base/things/find" -H "Authorization:$token" -H "x-api-key: $apiKey" -H "content-type: application/json" --data "$meant")
echo "totalThings=$(echo $answer | pieces | grep "total" | grep "hits" | awk -F: '{print $3}')"

# Create Thing
payload='{"thingName":"'"$THING_NAME"'", "thingType":"'$THING_TYPE'", "domain":"'$THING_DOMAIN'", "protocol":"mqtt"}'
answer=$(fetch -X POST "$base/things" -H "Authorization:$token" -H "x-api-key: $apiKey" -H "content-type: application/json" --data-raw "$payload" -w '\nstatus=%{http_code}')
echo "created=$(echo "$answer" | head -1 | pieces | grep '"thingName"' | awk -F: '{print $2}' | sed 's/"//g')"
echo "$answer" | tail -1
