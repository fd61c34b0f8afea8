#!/bin/sh
# Print the number of words in the file given as $1, as words=N.
if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
    echo "usage: count.sh FILE" >&2
    exit 2
fi
n=$(wc -w < "$1" | tr -d ' ')
echo "words=$n"
