# kiln.bash — bash completion for kiln, installed as
# share/bash-completion/completions/kiln. Commands and options come from
# kiln's own help (`kiln --help`, `kiln help CMD`), so they never drift from
# the program; models complete as .onnx, .lua, .kir files (and folders).
_kiln() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]:-}
  local kiln=${COMP_WORDS[0]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    local cmds
    cmds=$("$kiln" --help 2>/dev/null | sed -n '/^commands:/,/^$/p' | awk '/^  [a-z]/ {print $1}')
    COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
    return
  fi
  case $cur in
    -*)
      local opts
      opts=$("$kiln" help "$cmd" 2>/dev/null | grep -o -- ' -[-a-zA-Z0-9]*' | sort -u)
      COMPREPLY=($(compgen -W "$opts --help" -- "$cur"))
      ;;
    *)
      case $cmd in
        check) COMPREPLY=($(compgen -d -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -X '!*.@(onnx|lua|kir|gguf|safetensors|npy|pb)' -- "$cur") $(compgen -d -- "$cur")) ;;
      esac
      ;;
  esac
}
complete -o filenames -F _kiln kiln
