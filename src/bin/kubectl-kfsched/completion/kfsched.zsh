#compdef @PROGRAM@
# zsh completion for @PROGRAM@
#
#   source <(@PROGRAM@ completion zsh)                 # this shell (after compinit)
#   @PROGRAM@ completion zsh > "${fpath[1]}/_@PROGRAM@"   # every shell
#
# This completes the @PROGRAM@ command. `kubectl kfsched <TAB>` is completed by
# kubectl's own completion (kubectl >= 1.26, `source <(kubectl completion zsh)`),
# which runs the kubectl_complete-kfsched companion from PATH.
@FUNC@() {
    local -a lines comps globs nospace
    local out l v d directive=0 cur=${words[CURRENT]}
    out=$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null) || return 1
    lines=("${(@f)out}")
    if [[ ${lines[-1]} == :<-> ]]; then
        directive=${lines[-1]#:}
        lines=("${(@)lines[1,-2]}")
    fi
    if (( directive & 8 )); then
        for l in $lines; do globs+=("$l"); done
        _files -g "*.(${(j:|:)globs})"
        return
    fi
    [[ $cur == -*=* ]] && compset -P '*='
    for l in $lines; do
        [[ -z $l ]] && continue
        v=${l%%$'\t'*}
        d=
        [[ $l == *$'\t'* ]] && d=${l#*$'\t'}
        comps+=("${v//:/\\:}${d:+:$d}")
    done
    if (( ${#comps} == 0 )); then
        (( directive & 4 )) || _files
        return
    fi
    (( directive & 2 )) && nospace=(-S '')
    _describe -t values '@PROGRAM@' comps $nospace
}
if [[ ${funcstack[1]} == _@PROGRAM@ ]]; then
    @FUNC@ "$@"
else
    compdef @FUNC@ @PROGRAM@
fi
