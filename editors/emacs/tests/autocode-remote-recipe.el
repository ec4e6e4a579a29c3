;;; autocode-remote-recipe.el --- the documented eglot remote recipe, run as written  -*- lexical-binding: t -*-

;; Run by tests/editors/test_emacs_eglot.py with `emacs --batch'.  AUTOCODE_RECIPE names a
;; file holding the recipe's Lisp exactly as docs/editors.md shows it; this script loads it,
;; opens a text file of AUTOCODE_REPO, lets eglot pick the contact from
;; `eglot-server-programs' (as `M-x eglot' does) and lists the code actions the server offers.

(require 'cl-lib)
(require 'eglot)

(defun autocode-recipe-log (fmt &rest args)
  (princ (concat (apply #'format fmt args) "\n") #'external-debugging-output))

(defun autocode-recipe-run ()
  (load (getenv "AUTOCODE_RECIPE") nil t)
  (with-current-buffer (find-file-noselect (expand-file-name "notes.txt" (getenv "AUTOCODE_REPO")))
    (text-mode)
    (apply #'eglot (eglot--guess-contact))
    (let ((deadline (+ (float-time) 60)))
      (while (not (eglot-current-server))
        (when (> (float-time) deadline) (error "eglot did not connect"))
        (accept-process-output nil 0.05)))
    (dolist (action (eglot-code-actions (point-min) nil nil nil))
      (autocode-recipe-log "action: %s" (plist-get action :title)))
    (autocode-recipe-log "AUTOCODE-RECIPE-OK")))

(condition-case err
    (progn (autocode-recipe-run) (kill-emacs 0))
  (error (autocode-recipe-log "AUTOCODE-RECIPE-FAILED: %S" err) (kill-emacs 1)))
