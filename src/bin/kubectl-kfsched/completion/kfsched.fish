# fish completion for @PROGRAM@
#
#   @PROGRAM@ completion fish | source                 # this shell
#   @PROGRAM@ completion fish > ~/.config/fish/completions/@PROGRAM@.fish
#
# This completes the @PROGRAM@ command. `kubectl kfsched <TAB>` is completed by
# kubectl's own completion (kubectl >= 1.26, `kubectl completion fish | source`),
# which runs the kubectl_complete-kfsched companion from PATH.
function @FUNC@
    set -l args (commandline -opc)
    set -l cur (commandline -ct)
    set -l out ($args[1] __complete $args[2..-1] "$cur" 2>/dev/null)
    or return
    set -l directive 0
    if string match -qr '^:[0-9]+$' -- "$out[-1]"
        set directive (string sub -s 2 -- "$out[-1]")
        set -e out[-1]
    end
    if test (math "bitand($directive, 8)") -ne 0
        for f in (__fish_complete_path "$cur" | string replace -r -- '\t.*$' '')
            if string match -q -- '*/' "$f"
                echo $f
            else
                for ext in $out
                    string match -q -- "*.$ext" "$f"; and echo $f
                end
            end
        end
        return
    end
    set -l prefix (string match -r -- '^-[^=]*=' "$cur")
    set -l n 0
    for l in $out
        test -n "$l"; or continue
        printf '%s%s\n' "$prefix" "$l"
        set n (math $n + 1)
    end
    if test $n -eq 0; and test (math "bitand($directive, 4)") -eq 0
        __fish_complete_path "$cur"
    end
end
complete -c @PROGRAM@ -f -a '(@FUNC@)'
