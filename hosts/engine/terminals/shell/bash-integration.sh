# ahpd's shell integration for bash, run as its --rcfile: the person's own ~/.bashrc first, as
# an interactive bash would read it, then the marks ahpd reads off the terminal's output and
# takes out of it: OSC 133 A (prompt starts), B (command line starts), C (command runs),
# D;<exit status> (command finished) and OSC 7 (the working directory).
if [ -f ~/.bashrc ]; then
    . ~/.bashrc
fi

if [ -z "${__ahpd_marks-}" ]; then
    __ahpd_marks=1

    __ahpd_precmd() {
        local status=$?
        printf '\033]133;D;%s\007\033]7;file://%s%s\007' "$status" "${HOSTNAME-}" "$PWD"
        return $status
    }

    # A prompt a theme rebuilds at every prompt loses its marks: they are put back each time.
    __ahpd_mark_prompt() {
        case "$PS1" in
            *'133;B'*) ;;
            *) PS1='\[\033]133;A\007\]'"$PS1"'\[\033]133;B\007\]' ;;
        esac
    }

    # Ours first, so it reads the command's status before anything else changes it. The
    # person's own is kept as they wrote it: an array (bash 5.1) stays one, each entry run in
    # turn, and a string is joined by newlines, not '; ', so one that ends in ';' or '&'
    # (pyenv's, direnv's, 'history -a;') is no syntax error at every prompt.
    if [[ "$(declare -p PROMPT_COMMAND 2>/dev/null)" == "declare -a"* ]]; then
        PROMPT_COMMAND=(__ahpd_precmd "${PROMPT_COMMAND[@]}" __ahpd_mark_prompt)
    else
        __ahpd_nl=$'\n'
        PROMPT_COMMAND="__ahpd_precmd${PROMPT_COMMAND:+${__ahpd_nl}${PROMPT_COMMAND}}${__ahpd_nl}__ahpd_mark_prompt"
        unset __ahpd_nl
    fi
    PS0="${PS0-}"'\033]133;C\007'
fi
