# bash completion for @PROGRAM@
#
#   source <(@PROGRAM@ completion bash)                # this shell
#   @PROGRAM@ completion bash > ~/.local/share/bash-completion/completions/@PROGRAM@
#
# This completes the @PROGRAM@ command. `kubectl kfsched <TAB>` is completed by
# kubectl's own completion (kubectl >= 1.26, `source <(kubectl completion bash)`),
# which runs the kubectl_complete-kfsched companion from PATH.
@FUNC@() {
    local line=${COMP_LINE:0:COMP_POINT}
    local -a words=()
    read -r -a words <<< "$line"
    [[ $line =~ [[:space:]]$ ]] && words+=("")
    (( ${#words[@]} >= 2 )) || return 0
    local cur=${words[${#words[@]}-1]}
    local out
    out=$("${words[0]}" __complete "${words[@]:1}" 2>/dev/null) || return 0
    local -a lines=()
    local l
    while IFS='' read -r l; do lines+=("$l"); done <<< "$out"
    local directive=0 n=${#lines[@]}
    if (( n > 0 )) && [[ ${lines[n-1]} =~ ^:[0-9]+$ ]]; then
        directive=${lines[n-1]#:}
        unset "lines[n-1]"
    fi
    # Readline replaces only the text after the last COMP_WORDBREAKS character;
    # candidates answer for the whole word (or, for --flag=value, the value).
    # (No mapfile or nameref: bash 3.2, as on macOS, runs this too.)
    local vcur=$cur
    [[ $vcur == -*=* ]] && vcur=${vcur#*=}
    local bword=${line##*["$COMP_WORDBREAKS"]}
    local cut=$(( ${#vcur} - ${#bword} ))
    (( cut < 0 )) && cut=0
    COMPREPLY=()
    if (( directive & 8 )); then
        compopt -o filenames 2>/dev/null
        local ext
        for ext in "${lines[@]}"; do
            [[ -n $ext ]] || continue
            while IFS='' read -r l; do COMPREPLY+=("$l"); done < <(compgen -f -X "!*.$ext" -- "$bword")
        done
        while IFS='' read -r l; do COMPREPLY+=("$l"); done < <(compgen -d -- "$bword")
        return 0
    fi
    local v
    for l in "${lines[@]}"; do
        v=${l%%$'\t'*}
        [[ -n $v && $v == "$vcur"* ]] && COMPREPLY+=("${v:cut}")
    done
    if (( ${#COMPREPLY[@]} == 0 )); then
        (( directive & 4 )) || compopt -o default 2>/dev/null
        return 0
    fi
    (( directive & 2 )) && compopt -o nospace 2>/dev/null
    return 0
}
complete -F @FUNC@ @PROGRAM@
