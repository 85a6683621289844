#!/bin/sh
# go-mdraid (dracut module 90mdctl), pre-trigger: reads rd.md, rd.md.uuid
# and rd.auto as dracut's mdraid module does.
MD_UUID=$(getargs rd.md.uuid -d rd_MD_UUID=)
MD_UUID=$(str_replace "$MD_UUID" "-" "")
MD_UUID=$(str_replace "$MD_UUID" ":" "")

if { [ -z "$MD_UUID" ] && ! getargbool 0 rd.auto; } || ! getargbool 1 rd.md -d -n rd_NO_MD; then
	info "mdctl: no md assembly (rd.md=0, or neither rd.md.uuid nor rd.auto=1)"
	udevproperty rd_NO_MD=1
elif [ -n "$MD_UUID" ]; then
	# Only the named arrays: blkid's ID_FS_UUID of a member is the
	# array's UUID, 8-4-4-4-12.
	f=/etc/udev/rules.d/65-mdctl-incremental.rules
	while IFS= read -r line || [ -n "$line" ]; do
		if [ "${line%%UUID CHECK}" != "$line" ]; then
			for uuid in $MD_UUID; do
				printf 'ENV{ID_FS_UUID}=="%s", GOTO="mdctl_uuid_ok"\n' \
					"$(echo "$uuid" | sed 's/^\(.\{8\}\)\(.\{4\}\)\(.\{4\}\)\(.\{4\}\)\(.\{12\}\)$/\1-\2-\3-\4-\5/')"
			done
			printf 'GOTO="mdctl_end"\n'
			printf 'LABEL="mdctl_uuid_ok"\n'
		else
			printf '%s\n' "$line"
		fi
	done <"$f" >"$f.new"
	mv "$f.new" "$f"
	for uuid in $MD_UUID; do
		wait_for_dev "/dev/disk/by-id/md-uuid-$(echo "$uuid" | sed 's/^\(.\{8\}\)\(.\{8\}\)\(.\{8\}\)\(.\{8\}\)$/\1:\2:\3:\4/')"
	done
fi
