# bash completion for memdiff(1), installed as share/bash-completion/completions/memdiff.
# Plain bash (compgen, compopt): no helper of the bash-completion package is needed. The options
# per command are those "memdiff help COMMAND" prints (tests/test_manual.c checks that).

_memdiff_pids()
{
    local p pids=()
    for p in /proc/[0-9]*; do
        pids+=("${p#/proc/}")
    done
    compgen -W "${pids[*]}" -- "$1"
}

# Process names as /proc/PID/comm has them (--name, --exact), one a line: a name may hold spaces.
_memdiff_names()
{
    local f n IFS=$'\n' names=()
    for f in /proc/[0-9]*/comm; do
        read -r n 2>/dev/null < "$f" && names+=("$n")
    done
    compgen -W "$(printf '%s\n' "${names[@]}" | sort -u)" -- "$1"
}

# Timeline files (*.mdt, memdiff record) and directories to descend into.
_memdiff_timelines()
{
    compopt -o filenames 2>/dev/null
    compgen -f -X '!*.mdt' -- "$1"
    compgen -d -- "$1"
}

# Snapshot files (*.mds) and directories to descend into.
_memdiff_snapshots()
{
    compopt -o filenames 2>/dev/null
    compgen -f -X '!*.mds' -- "$1"
    compgen -d -- "$1"
}

_memdiff()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=""
    local IFS=$' \t\n'
    COMPREPLY=()
    [ "$COMP_CWORD" -gt 1 ] && cmd=${COMP_WORDS[1]}

    # "--opt=value": bash splits at '=' (COMP_WORDBREAKS), so the option is one or two words back.
    if [ "$cur" = "=" ]; then
        prev=${COMP_WORDS[COMP_CWORD-1]}
        cur=""
    elif [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 3 ]; then
        prev=${COMP_WORDS[COMP_CWORD-2]}
    fi

    local commands="snap diff show watch wss record run report system help"
    local categories="image heap stack mapped-file shared private special own unknown"
    local report="--json --no-header --sort --top --category --human -H --color --width -w"
    local select="--name --exact"
    local opts
    case $cmd in
        snap) opts="--output -o --depth -d --pss --quiet -q --json $select" ;;
        diff) opts="--verbose -v --force -f --fail-on $report" ;;
        show) opts="--regions -r --depth -d --pss $report $select" ;;
        watch)
            opts="--interval -i --count -n --baseline -b --depth -d --pss --verbose -v --brief"
            opts="$opts --fail-on $report $select"
            ;;
        wss)
            opts="--interval -i --count -n --cumulative -C --profile -P --times -t --json"
            opts="$opts $select"
            ;;
        record | run)
            # After "--" the words are the command's: complete commands, then files.
            local i
            for ((i = 2; i < COMP_CWORD; i++)); do
                if [ "${COMP_WORDS[i]}" = "--" ]; then
                    if [ "$i" -eq $((COMP_CWORD - 1)) ]; then
                        COMPREPLY=($(compgen -c -- "$cur"))
                    else
                        compopt -o default 2>/dev/null
                    fi
                    return 0
                fi
            done
            opts="--output -o --interval -i --depth -d --pss --threshold -t --no-ptrace --quiet -q"
            if [ "$cmd" = record ]; then
                opts="$opts --json $select"
            else
                opts="$opts --json --sort --top --category --human -H --color --width -w"
            fi
            ;;
        report) opts="--html --svg --wss --top" ;;
        system)
            opts="--output -o --sort --top --user -u --name --json --no-phys --no-header"
            opts="$opts --quiet -q --human -H --color --width -w"
            ;;
        help)
            [ "$COMP_CWORD" -eq 2 ] && COMPREPLY=($(compgen -W "$commands" -- "$cur"))
            return 0
            ;;
        "")
            COMPREPLY=($(compgen -W "$commands --help -h --version -V" -- "$cur"))
            return 0
            ;;
        *) return 0 ;;
    esac
    opts="$opts --help -h"

    case $prev in
        --depth | -d)
            COMPREPLY=($(compgen -W "fast standard deep" -- "$cur"))
            return 0
            ;;
        --sort)
            if [ "$cmd" = system ]; then
                COMPREPLY=($(compgen -W "pid rss pss uss swap" -- "$cur"))
            else
                COMPREPLY=($(compgen -W "size net address name pid rss pss uss swap" -- "$cur"))
            fi
            return 0
            ;;
        --user | -u) COMPREPLY=($(compgen -u -- "$cur")); return 0 ;;
        --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return 0 ;;
        --baseline | -b) COMPREPLY=($(compgen -W "first previous" -- "$cur")); return 0 ;;
        --category)
            # A comma-separated list: complete the last item, keep the ones before it.
            local done_="" last=$cur
            case $cur in *,*) done_=${cur%,*},; last=${cur##*,} ;; esac
            COMPREPLY=($(compgen -P "$done_" -W "$categories" -- "$last"))
            compopt -o nospace 2>/dev/null
            return 0
            ;;
        --output | -o | --html | --svg | --wss)
            local IFS=$'\n' # one file a line: a name may hold spaces
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -- "$cur"))
            return 0
            ;;
        --name | --exact)
            local IFS=$'\n'
            COMPREPLY=($(_memdiff_names "$cur"))
            return 0
            ;;
        --interval | -i | --count | -n | --top | --fail-on | --width | -w | --threshold | -t)
            return 0
            ;;
    esac

    case $cur in
        -*)
            COMPREPLY=($(compgen -W "$opts" -- "$cur"))
            # An option that takes its value after '=' gets no space.
            [ "${#COMPREPLY[@]}" -eq 1 ] && [ "${COMPREPLY[0]}" = --color ] && {
                COMPREPLY=(--color=); compopt -o nospace 2>/dev/null; }
            return 0
            ;;
    esac
    IFS=$'\n' # one file or pid a line
    case $cmd in
        snap | watch | wss | record) COMPREPLY=($(_memdiff_pids "$cur")) ;;
        diff) COMPREPLY=($(_memdiff_snapshots "$cur")) ;;
        show) COMPREPLY=($(_memdiff_snapshots "$cur") $(_memdiff_pids "$cur")) ;;
        report) COMPREPLY=($(_memdiff_timelines "$cur")) ;;
    esac
    return 0
}

complete -F _memdiff memdiff
